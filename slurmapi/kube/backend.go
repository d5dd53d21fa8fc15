package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Options configure the Kubernetes backend.
type Options struct {
	// Namespace holds the job id counter; default "sluice-system".
	Namespace string
	// IDBlock is how many job ids one counter update reserves; default 100.
	IDBlock uint32
	// MaxJobID is the highest id a Slurm job takes (rest.maxJobId); the ids
	// above it, up to LastJobID, are kept for Kubernetes workloads. 0 means
	// DefaultMaxSlurmJobID.
	MaxJobID uint32
	// CatalogTTL is how long a catalogue snapshot serves submissions
	// before the Partitions, Queues and QOS are listed again; default 1s.
	CatalogTTL time.Duration
	// SubmitWindow, when set, turns on group commit (submitbatch.go): the
	// jobs submitted within this window (a few milliseconds) are stored
	// in one batch object, answered together, and made PodGroups by the
	// SubmitQueue. Zero creates each job's PodGroup at once.
	SubmitWindow time.Duration
	// SubmitBatchJobs is the most jobs one batch holds; default 256.
	SubmitBatchJobs int
	// MaterializeWorkers is how many PodGroup creates the SubmitQueue keeps
	// in flight; default 8.
	MaterializeWorkers int
	// TokenKey is the server's token key: submitted environments are sealed
	// under a key derived from it (sealenv.go), which the pod factory, given
	// the same key as its LaunchKeySeed, opens, and the tokens it signed are
	// dropped from them. Empty: a random seed for this backend's life (tests;
	// a factory then cannot open the environments it seals).
	TokenKey []byte
}

// Backend implements the Slurm API's job and cluster side on Kubernetes.
// Accounting reads (sacct, sshare) and sacctmgr writes belong to the
// accounting ledger and answer 501 here until it is wired in.
type Backend struct {
	c    client.Client
	ids  *JobIDs
	opts Options
	// batch stores submissions in groups; nil without a SubmitWindow.
	batch *batcher
	// counts are each user's jobs against MaxSubmitJobs limits.
	counts *submitCounts
	// envSeed seals submitted environments (Options.TokenKey).
	envSeed []byte

	nsMu    sync.Mutex
	nsReady map[string]bool

	// pruneMu guards prunedAt, when pruneClaims last ran.
	pruneMu  sync.Mutex
	prunedAt time.Time

	catMu   sync.Mutex
	catalog *slurmapi.Catalog
	catAt   time.Time
}

// Scheme has the core types and Sluice's scheduling types.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewClient is a controller-runtime client for the cluster of cfg with Scheme's kinds:
// what every part of this package, and the server's webhook, talks to the cluster with.
func NewClient(cfg *rest.Config) (client.WithWatch, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}

// New connects a backend to the cluster of cfg.
func New(cfg *rest.Config, opts Options) (*Backend, error) {
	if opts.Namespace == "" {
		opts.Namespace = "sluice-system"
	}
	if opts.IDBlock == 0 {
		opts.IDBlock = 100
	}
	if opts.CatalogTTL == 0 {
		opts.CatalogTTL = time.Second
	}
	if opts.SubmitBatchJobs <= 0 {
		opts.SubmitBatchJobs = defaultSubmitBatchJobs
	}
	if opts.MaterializeWorkers <= 0 {
		opts.MaterializeWorkers = 8
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{c: c, opts: opts, ids: NewJobIDs(c, opts.Namespace, "sluice-job-ids", opts.IDBlock), nsReady: map[string]bool{},
		envSeed: opts.TokenKey}
	b.ids.LimitSlurm(opts.MaxJobID)
	if len(b.envSeed) == 0 {
		b.envSeed = randomSeed()
	}
	b.counts = &submitCounts{list: func(ctx context.Context) ([]v1alpha1.PodGroup, error) { return b.podGroups(ctx, 0) }}
	if opts.SubmitWindow > 0 {
		if b.batch, err = newBatcher(cfg, opts); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// JobIDs is the backend's job id counter, which the pod grouper shares so manifest
// workloads get ids no Slurm job has.
func (b *Backend) JobIDs() *JobIDs { return b.ids }

// Submit checks the submission against the MaxSubmitJobs limits that
// apply to it, allocates a job id and creates the job's PodGroup in its
// account's namespace (created on first use), or with a SubmitWindow
// stores it in the next batch. The PodGroup is the only object of a
// pending job.
func (b *Backend) Submit(ctx context.Context, d *slurmapi.JobDesc) (res slurmapi.SubmitResult, err error) {
	var id uint32 // d's Idempotency-Key names a job never stored: store it under its id
	fromClaim := false
	if d.IdempotencyKey != "" {
		claim, ok, err := b.readClaim(ctx, d)
		if err != nil {
			return slurmapi.SubmitResult{}, err
		}
		if ok {
			stored, err := b.replayed(ctx, d, claim)
			if err != nil || stored {
				return slurmapi.SubmitResult{JobID: claim.job, StepID: "batch", Replayed: stored}, err
			}
			id, fromClaim = claim.job, true
		}
	}
	cat, err := b.Catalog(ctx)
	if err != nil {
		return slurmapi.SubmitResult{}, err
	}
	release, err := b.counts.reserve(ctx, cat, d) // MaxSubmitJobs, before an id is taken
	if err != nil {
		return slurmapi.SubmitResult{}, err
	}
	if d.TestOnly {
		release() // sbatch --test-only: within the limits, and nothing stored
		return slurmapi.SubmitResult{}, nil
	}
	defer func() {
		if err != nil || res.Replayed {
			release()
		}
	}()
	if err := b.ensureNamespace(ctx, Namespace(d.Account)); err != nil {
		return slurmapi.SubmitResult{}, err
	}
	if id == 0 {
		var replay bool
		if id, replay, fromClaim, err = b.newJobID(ctx, d); err != nil || replay {
			return slurmapi.SubmitResult{JobID: id, StepID: "batch", Replayed: replay}, err
		}
	}
	pg := PodGroupFor(d, id)
	// Before anything stores it (the PodGroup, or a batch ConfigMap): the
	// user's variables sealed, tokens dropped.
	if err := sealPodGroupEnvironment(pg, b.envSeed, b.isToken); err != nil {
		return slurmapi.SubmitResult{}, err
	}
	// A claimed job whose first attempt may still be in a batch being written is created
	// as its PodGroup, never batched: a batch named after its id may exist already, and
	// the collision would fail every other job of the retry's batch.
	if b.batch != nil && !fromClaim {
		pg.Annotations[SubmitTimeAnnotation] = v1alpha1.FormatSubmitTime(time.Now())
		err := b.batch.store(ctx, id, pg)
		switch {
		case err == nil:
			return slurmapi.SubmitResult{JobID: id, StepID: "batch"}, nil
		case !errors.Is(err, errOversize):
			return slurmapi.SubmitResult{}, fmt.Errorf("job %d: %w", id, err)
		}
	}
	if err := b.c.Create(ctx, pg); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err) && d.IdempotencyKey != "":
			// Another attempt with this key stored the job first.
			return slurmapi.SubmitResult{JobID: id, StepID: "batch"}, nil
		case apierrors.IsInvalid(err):
			return slurmapi.SubmitResult{}, slurmapi.BadRequest(slurmapi.ErrRestInvalidJobs, "job", "the cluster refused the job: %v", err)
		}
		return slurmapi.SubmitResult{}, fmt.Errorf("create PodGroup for job %d: %w", id, err)
	}
	return slurmapi.SubmitResult{JobID: id, StepID: "batch"}, nil
}

// isToken reports whether v is a token signed with the server's key.
func (b *Backend) isToken(v string) bool { return slurmapi.IssuedToken(b.opts.TokenKey, v) }

// newJobID takes a fresh job id for d and, when d has an Idempotency-Key,
// claims the key for it. An array takes one id, as in Slurm: its tasks take
// theirs when they are split off (array.go). replay is true when another
// attempt with the key claimed it first and stored its job: id is that
// job's, and nothing is to be stored. claimed is true when id is another
// attempt's, whose job is not stored yet.
func (b *Backend) newJobID(ctx context.Context, d *slurmapi.JobDesc) (id uint32, replay, claimed bool, err error) {
	if id, err = b.ids.NextSlurm(ctx, 1); err != nil {
		return 0, false, false, slurmIDsUsedUp(err)
	}
	if d.IdempotencyKey == "" {
		return id, false, false, nil
	}
	claim, created, err := b.claimKey(ctx, d, id)
	if err != nil || created {
		return id, false, false, err
	}
	// The id taken above stays unused: a gap, as a failed submission leaves.
	stored, err := b.replayed(ctx, d, claim)
	return claim.job, stored, !stored, err
}

// slurmIDsUsedUp words the counter's ErrJobIDsUsedUp as the REST answer:
// slurmctld's own (EAGAIN, "Resource temporarily unavailable", its answer
// when get_next_job_id finds no id left) with 429, a 4xx because the
// server is not at fault and nothing it can retry will help: the submit is
// refused until an administrator acts. Other errors pass unchanged.
func slurmIDsUsedUp(err error) error {
	var used *IDsUsedUpError
	if !errors.As(err, &used) {
		return err
	}
	if !used.Slurm {
		return slurmapi.Errorf(http.StatusTooManyRequests, slurmapi.ErrAgain, "job_id",
			"the cluster has no job id left: ids are never reused, and every id up to %d is taken", used.Ceiling)
	}
	return slurmapi.Errorf(http.StatusTooManyRequests, slurmapi.ErrAgain, "job_id",
		"the cluster has no job id left for Slurm jobs: ids are never reused, and every id up to %d (rest.maxJobId) is taken; "+
			"the ids above are kept for Kubernetes workloads. An administrator can raise rest.maxJobId (at most %d)", used.Ceiling, LastJobID)
}

func (b *Backend) ensureNamespace(ctx context.Context, name string) error {
	b.nsMu.Lock()
	ready := b.nsReady[name]
	b.nsMu.Unlock()
	if ready {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "sluice"}}}
	if err := b.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	b.nsMu.Lock()
	b.nsReady[name] = true
	b.nsMu.Unlock()
	return nil
}

// podGroups lists the PodGroups that carry a job id, optionally one id,
// with the batched jobs not created yet.
func (b *Backend) podGroups(ctx context.Context, id uint32) ([]v1alpha1.PodGroup, error) {
	batched, err := b.batchedGroups(ctx, id)
	if err != nil {
		return nil, err
	}
	var sel client.ListOption = client.HasLabels{v1alpha1.JobIDLabel}
	if id != 0 {
		sel = client.MatchingLabels{v1alpha1.JobIDLabel: v1alpha1.FormatJobID(id)}
	}
	stored, err := b.listGroups(ctx, sel)
	if err != nil {
		return nil, err
	}
	return withBatched(stored, batched), nil
}

func (b *Backend) listGroups(ctx context.Context, opts ...client.ListOption) ([]v1alpha1.PodGroup, error) {
	var list v1alpha1.PodGroupList
	if err := b.c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list PodGroups: %w", err)
	}
	return list.Items, nil
}

// withArray adds, when pgs is one array's record, the array's tasks: job
// id A names the whole array, as in Slurm. A batched record has no tasks
// split off yet.
func (b *Backend) withArray(ctx context.Context, pgs []v1alpha1.PodGroup) ([]v1alpha1.PodGroup, error) {
	if len(pgs) != 1 || jobstate.IsBatched(&pgs[0]) || pgs[0].Labels[ArrayJobLabel] == "" || pgs[0].Labels[ArrayJobLabel] != pgs[0].Labels[v1alpha1.JobIDLabel] {
		return pgs, nil
	}
	return b.listGroups(ctx, client.InNamespace(pgs[0].Namespace), client.MatchingLabels{ArrayJobLabel: pgs[0].Labels[ArrayJobLabel]})
}

// Jobs lists Slurm-submitted and manifest workloads alike.
func (b *Backend) Jobs(ctx context.Context, f slurmapi.JobFilter) ([]slurmapi.Job, error) {
	var id uint32
	if len(f.IDs) == 1 {
		id = f.IDs[0]
	}
	pgs, err := b.podGroups(ctx, id)
	if err == nil && id != 0 {
		pgs, err = b.withArray(ctx, pgs)
	}
	if err != nil {
		return nil, err
	}
	jobs, err := jobstate.Read(ctx, b.c, pgs, id)
	if err != nil {
		return nil, err
	}
	out := make([]slurmapi.Job, 0, len(jobs))
	for i := range jobs {
		j, err := JobFromPodGroup(jobs[i].Group)
		if err != nil {
			continue // a group with a broken id label is not a job
		}
		setView(&j, &jobs[i])
		if !matches(f, &j) {
			continue
		}
		out = append(out, j)
	}
	markArrayTaskLimits(out)
	slices.SortFunc(out, func(a, b slurmapi.Job) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

func matches(f slurmapi.JobFilter, j *slurmapi.Job) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	inPart := len(f.Partitions) == 0 || slices.ContainsFunc(j.Desc.Partitions(), func(p string) bool { return slices.Contains(f.Partitions, p) })
	return (len(f.IDs) == 0 || slices.Contains(f.IDs, j.ID) || slices.Contains(f.IDs, j.ArrayJobID)) && in(f.Users, j.Desc.User) &&
		in(f.Accounts, j.Desc.Account) && inPart && in(f.States, j.State[0])
}

// Job returns one job, 404 if no job has its id.
func (b *Backend) Job(ctx context.Context, id uint32) (slurmapi.Job, error) {
	job, err := b.job(ctx, id)
	if err != nil {
		return slurmapi.Job{}, err
	}
	j, err := JobFromPodGroup(job.Group)
	if err != nil {
		return j, err
	}
	setView(&j, &job)
	return j, nil
}

// podGroup is the group of job id, without reading its pods unless no group object
// has the id (then a bare pod may imply it); 404 when no job has it.
func (b *Backend) podGroup(ctx context.Context, id uint32) (*v1alpha1.PodGroup, error) {
	pgs, err := b.podGroups(ctx, id)
	if err != nil || len(pgs) > 0 {
		return firstGroup(pgs), err
	}
	job, err := b.job(ctx, id)
	return job.Group, err
}

func firstGroup(pgs []v1alpha1.PodGroup) *v1alpha1.PodGroup {
	if len(pgs) == 0 {
		return nil
	}
	return &pgs[0]
}

// job is job id, as the job model identifies it (jobstate.Read), with a batched job
// not stored yet; 404 when there is none.
func (b *Backend) job(ctx context.Context, id uint32) (jobstate.Job, error) {
	pgs, err := b.podGroups(ctx, id)
	if err != nil {
		return jobstate.Job{}, err
	}
	jobs, err := jobstate.Read(ctx, b.c, pgs, id)
	switch {
	case err != nil:
		return jobstate.Job{}, err
	case len(jobs) == 0:
		return jobstate.Job{}, slurmapi.NotFound(slurmapi.ErrInvalidJobID, "job_id", "job %d does not exist", id)
	}
	return jobs[0], nil
}

// slurmGroup loads a Slurm-submitted job's PodGroup for a change; a job
// still in a batch gets its PodGroup first.
func (b *Backend) slurmGroup(ctx context.Context, id uint32) (*v1alpha1.PodGroup, error) {
	pg, err := b.podGroup(ctx, id)
	if err != nil {
		return nil, err
	}
	return b.asSlurmGroup(ctx, id, pg)
}

// asSlurmGroup is slurmGroup for job id's group pg, already read.
func (b *Backend) asSlurmGroup(ctx context.Context, id uint32, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	var err error
	if jobstate.IsBatched(pg) {
		pg, err = b.materialize(ctx, pg)
	}
	if err != nil {
		return nil, err
	}
	if pg.Spec.Slurm == nil {
		return nil, slurmapi.BadRequest(slurmapi.ErrNotSupported, "job_id",
			"job %d is the Kubernetes workload %s/%s; change it with kubectl", id, pg.Namespace, pg.Name)
	}
	return pg, nil
}

// UpdateJob changes hold, time limit, name or comment in spec.slurm, and
// the priority annotation.
func (b *Backend) UpdateJob(ctx context.Context, id uint32, u slurmapi.JobUpdate) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return b.updateJob(ctx, id, u) })
}

func (b *Backend) updateJob(ctx context.Context, id uint32, u slurmapi.JobUpdate) error {
	pg, err := b.slurmGroup(ctx, id)
	if err != nil {
		return err
	}
	s := pg.Spec.Slurm
	if u.Hold != nil {
		if *u.Hold && pg.Status.Phase != "" && pg.Status.Phase != v1alpha1.PodGroupPending {
			return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "hold", "job %d is %s; only pending jobs can be held", id, pg.Status.Phase)
		}
		s.Hold = *u.Hold
	}
	if u.Priority != nil {
		if pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		pg.Annotations[PriorityAnnotation] = v1alpha1.FormatPriority(*u.Priority)
	}
	if u.Nice != nil {
		if pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		pg.Annotations[v1alpha1.NiceAnnotation] = v1alpha1.FormatNice(*u.Nice)
	}
	if u.TimeLimit != nil {
		if *u.TimeLimit < 0 {
			s.TimeLimit = &metav1.Duration{} // UNLIMITED
		} else {
			s.TimeLimit = &metav1.Duration{Duration: *u.TimeLimit}
		}
	}
	if u.Name != nil {
		s.Name = *u.Name
	}
	if u.Comment != nil {
		s.Comment = *u.Comment
	}
	if u.Requeue != nil {
		s.Requeue = *u.Requeue
	}
	if u.Partition != nil || u.QOS != nil || u.Dependency != nil {
		// The server checked that the job was pending; a job that
		// started since has pods placed for the old values.
		if pg.Status.Phase != "" && pg.Status.Phase != v1alpha1.PodGroupPending {
			return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrJobNotPending, "job_id", "job %d is %s; its partition, QOS and dependency change only while it is pending", id, pg.Status.Phase)
		}
	}
	if u.Partition != nil {
		parts := strings.Split(*u.Partition, ",") // checked by the server: a list of partitions
		pg.Spec.Partition = parts[0]
		if pg.Labels == nil {
			pg.Labels = map[string]string{}
		}
		pg.Labels[v1alpha1.PartitionLabel] = parts[0]
		if len(parts) > 1 {
			if pg.Annotations == nil {
				pg.Annotations = map[string]string{}
			}
			pg.Annotations[v1alpha1.PartitionsAnnotation] = v1alpha1.FormatPartitions(parts)
		} else {
			delete(pg.Annotations, v1alpha1.PartitionsAnnotation)
		}
	}
	if u.QOS != nil {
		pg.Spec.QOS = *u.QOS
	}
	if u.Dependency != nil {
		s.Dependency = *u.Dependency
	}
	return b.update(ctx, pg)
}

func (b *Backend) update(ctx context.Context, pg *v1alpha1.PodGroup) error {
	return refusal(b.c.Update(ctx, pg), pg)
}

// writeStatus changes pg's status through the one status writer, worded for the client.
func (b *Backend) writeStatus(ctx context.Context, pg *v1alpha1.PodGroup, change func(*v1alpha1.PodGroupStatus)) error {
	return refusal(jobstate.WriteStatus(ctx, b.c.Status(), pg, change), pg)
}

// refusal words an API server's refusal of a change for the client. A
// conflict stays an API error, so retry.RetryOnConflict can try again.
func refusal(err error, pg *v1alpha1.PodGroup) error {
	switch {
	case apierrors.IsInvalid(err):
		return slurmapi.BadRequest(slurmapi.ErrRestInvalidJobs, "job", "the cluster refused the change: %v", err)
	}
	return err
}

// SignalJob cancels a job (KILL, TERM, INT): its PodGroup is marked
// Cancelled and its pods are deleted. Other signals are not delivered.
func (b *Backend) SignalJob(ctx context.Context, id uint32, req slurmapi.CancelRequest) error {
	switch req.Signal {
	case 2, 9, 15:
	default:
		return slurmapi.Errorf(http.StatusNotImplemented, slurmapi.ErrNotSupported, "signal",
			"only cancelling (KILL, TERM, INT) is supported; signal %d is not delivered to pods", req.Signal)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return b.cancel(ctx, id, req.ArrayTask) })
}

// cancel ends job id; the id of an array cancels every task of it not
// ended yet (the record first, so no more are split off); with a task
// index only that task (dropped from the record if not split off yet).
func (b *Backend) cancel(ctx context.Context, id uint32, task *int) error {
	job, err := b.job(ctx, id)
	if err != nil {
		return err
	}
	if pod := job.BarePod(); pod != nil {
		return b.cancelBarePod(ctx, id, pod)
	}
	pg, err := b.asSlurmGroup(ctx, id, job.Group)
	if err != nil {
		return err
	}
	switch {
	case task != nil && arrayRecord(pg):
		return b.cancelPendingTask(ctx, pg, *task)
	case task != nil || pg.Labels[ArrayJobLabel] == "" || pg.Labels[ArrayJobLabel] != pg.Labels[v1alpha1.JobIDLabel]:
		return b.cancelGroup(ctx, pg)
	}
	all, err := b.withArray(ctx, []v1alpha1.PodGroup{*pg})
	if err != nil {
		return err
	}
	// The record (no task label) sorts first: cancelled, it splits no more.
	slices.SortFunc(all, func(a, b v1alpha1.PodGroup) int {
		return strings.Compare(a.Labels[ArrayTaskLabel], b.Labels[ArrayTaskLabel])
	})
	cancelled := 0
	for i := range all {
		if jobstate.PhaseFinal(all[i].Status.Phase) {
			continue
		}
		if err := b.cancelGroup(ctx, &all[i]); err != nil {
			return err
		}
		cancelled++
	}
	if cancelled == 0 {
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "every task of array %d already ended", id)
	}
	return nil
}

// cancelPendingTask drops index from the array record's tasks still to
// split; the last one left cancels the record, which stands for it.
func (b *Backend) cancelPendingTask(ctx context.Context, pg *v1alpha1.PodGroup, index int) error {
	pending, err := pendingIndices(pg)
	if err != nil {
		return err
	}
	if err := splitUnderWay(pg, index, pending); err != nil {
		return err
	}
	k := slices.Index(pending, index)
	switch {
	case k < 0:
		return slurmapi.NotFound(slurmapi.ErrInvalidJobID, "job_id", "array %s has no pending task %d", pg.Labels[ArrayJobLabel], index)
	case len(pending) == 1:
		return b.cancelGroup(ctx, pg)
	}
	pg.Annotations[ArrayPendingAnnotation] = sbatch.FormatIndices(slices.Delete(pending, k, k+1))
	return b.update(ctx, pg)
}

func (b *Backend) cancelGroup(ctx context.Context, pg *v1alpha1.PodGroup) error {
	id := pg.Labels[v1alpha1.JobIDLabel]
	if jobstate.PhaseFinal(pg.Status.Phase) {
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %s already ended (%s)", id, pg.Status.Phase)
	}
	err := b.writeStatus(ctx, pg, func(st *v1alpha1.PodGroupStatus) {
		jobstate.MarkEnded(st, v1alpha1.PodGroupCancelled, time.Now())
	})
	if err != nil {
		return err
	}
	return b.deletePods(ctx, pg)
}

func (b *Backend) deletePods(ctx context.Context, pg *v1alpha1.PodGroup) error {
	err := b.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(pg.Namespace),
		client.MatchingLabels{v1alpha1.JobIDLabel: pg.Labels[v1alpha1.JobIDLabel]})
	if err != nil {
		return fmt.Errorf("delete pods of job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	return nil
}

// RequeueJob returns a started or finished job to PENDING: its pods go,
// its group is Pending again with one more requeue, held if asked.
func (b *Backend) RequeueJob(ctx context.Context, id uint32, hold bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return b.requeue(ctx, id, hold) })
}

func (b *Backend) requeue(ctx context.Context, id uint32, hold bool) error {
	pg, err := b.slurmGroup(ctx, id)
	if err != nil {
		return err
	}
	if pg.Status.Phase == "" || pg.Status.Phase == v1alpha1.PodGroupPending {
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrRestBadRequest, "job_id", "job %d is pending; only started or finished jobs can be requeued", id)
	}
	if hold != pg.Spec.Slurm.Hold {
		pg.Spec.Slurm.Hold = hold
		if err := b.update(ctx, pg); err != nil {
			return err
		}
	}
	if err := b.deletePods(ctx, pg); err != nil {
		return err
	}
	return b.writeStatus(ctx, pg, func(st *v1alpha1.PodGroupStatus) { jobstate.MarkRequeued(st, time.Now()) })
}
