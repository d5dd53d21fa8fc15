package slurmapi

import "context"

// Backend is what the REST server needs from the cluster. The Kubernetes
// adapter (slurmapi/kube) implements it on PodGroups, Nodes and the Sluice
// CRDs; the accounting ledger provides the slurmdb reads.
//
// Methods return *Error for anything the caller got wrong (unknown job:
// ErrInvalidJobID with 404, ...); other errors are server faults (500).
// Authorization is done by the server before a call; the backend trusts
// the user named in its arguments.
type Backend interface {
	JobBackend
	ClusterBackend
	AccountsBackend
	ReservationBackend
}

// JobBackend stores and controls jobs.
type JobBackend interface {
	// Submit stores a validated job and returns its id. It either
	// creates the job completely or not at all.
	Submit(ctx context.Context, job *JobDesc) (SubmitResult, error)
	Jobs(ctx context.Context, f JobFilter) ([]Job, error)
	Job(ctx context.Context, id uint32) (Job, error)
	// ArrayTask is task index of array job arrayID: the task's own job,
	// or the array's record while that task is not split off yet.
	ArrayTask(ctx context.Context, arrayID uint32, index int) (Job, error)
	UpdateJob(ctx context.Context, id uint32, u JobUpdate) error
	SignalJob(ctx context.Context, id uint32, req CancelRequest) error
	// RequeueJob returns a job to PENDING (held if hold is true).
	RequeueJob(ctx context.Context, id uint32, hold bool) error
}

// ClusterBackend reads what squeue/sinfo/sshare/sdiag show.
type ClusterBackend interface {
	// Catalog is the current set of partitions, accounts, QOS and
	// associations that submissions are validated against. It is called
	// on every submit and must be cheap (served from a cache).
	Catalog(ctx context.Context) (*Catalog, error)
	Nodes(ctx context.Context) ([]Node, error)
	Partitions(ctx context.Context) ([]Partition, error)
	Shares(ctx context.Context, accounts, users []string) ([]Share, error)
	Diag(ctx context.Context) (Diag, error)
	// UpdateNode drains or resumes a node; the warning, if any, says
	// what still keeps it from work (a remediation quarantine).
	UpdateNode(ctx context.Context, name string, u NodeUpdate) (warning string, err error)
}

// AccountsBackend is the sacctmgr side: reads from the ledger, writes that
// create or change Queue and QOS objects.
type AccountsBackend interface {
	Accounts(ctx context.Context) ([]Account, error)
	Associations(ctx context.Context) ([]Association, error)
	QOSList(ctx context.Context) ([]QOS, error)
	Users(ctx context.Context) ([]User, error)
	TRES(ctx context.Context) ([]TRES, error)
	// AccountingJobs lists finished and running jobs (sacct).
	AccountingJobs(ctx context.Context, f JobFilter) ([]Job, error)
	UpsertAccounts(ctx context.Context, accounts []Account) error
	UpsertAssociations(ctx context.Context, assocs []Association) error
	UpsertQOS(ctx context.Context, qos []QOS) error
	UpsertUsers(ctx context.Context, users []User) error
	DeleteAccount(ctx context.Context, name string) error
	DeleteQOS(ctx context.Context, name string) error
}
