package slurmapi

import (
	"github.com/sluicehq/sluice/slurmapi/sbatch"

	"context"
	"math"
	"strings"

	"github.com/sluicehq/sluice/accounting"
)

// Ledger is what the REST API reads from the accounting ledger;
// accounting.Ledger satisfies it. With a ledger, slurmdb/jobs answers like
// slurmdbd (finished jobs included, long after their PodGroups are gone) and
// shares like sshare (Fair Tree over decayed usage).
type Ledger interface {
	Jobs(ctx context.Context, f accounting.JobFilter) ([]accounting.Job, error)
	// FairShare is the Fair Tree over assocs with the ledger's usage.
	FairShare(ctx context.Context, assocs []accounting.ShareAssoc) ([]accounting.ShareRow, error)
}

// WithLedger returns b with its slurmdb job reads (sacct) and fair-share
// standing (sshare) served from l; everything else still goes to b.
func WithLedger(b Backend, l Ledger) Backend { return ledgerBackend{Backend: b, ledger: l} }

type ledgerBackend struct {
	Backend
	ledger Ledger
}

// ledgerOf is the server's ledger, nil when it has none.
func ledgerOf(b Backend) Ledger {
	if lb, ok := b.(ledgerBackend); ok {
		return lb.ledger
	}
	return nil
}

// fromLedger turns a ledger record into the job slurmdb renders. ok is false
// for a manifest workload whose derived id does not fit Slurm's 32-bit job
// ids (the pod grouper gave it no job id).
func fromLedger(r *accounting.Job) (j Job, ok bool) {
	if r.JobID <= 0 || r.JobID > math.MaxUint32 {
		return j, false
	}
	j = Job{
		ID: uint32(r.JobID),
		Desc: JobDesc{Name: r.Name, User: r.User, Account: r.Account, Partition: r.Partition, QOS: r.QOS,
			Nodes: int(max(r.Requested.Nodes, 1)), Tasks: 1},
		State: []string{string(r.State)}, Reason: "None",
		SubmitTime: r.Submit, StartTime: r.Start, EndTime: r.End,
		CPUs:    int(r.Allocated.CPUs),
		TRESReq: r.Requested.String(), TRESAlloc: r.Allocated.String(),
		ExitCode: r.ExitCode, Signal: r.ExitSignal,
		Manifest: r.Origin == accounting.OriginKubernetes,
	}
	if r.ArrayTaskID >= 0 && r.ArrayJobID > 0 && r.ArrayJobID <= math.MaxUint32 {
		task := int(r.ArrayTaskID)
		j.ArrayJobID, j.ArrayTaskID = uint32(r.ArrayJobID), &task
	}
	if r.NodeList != "" { // the ledger keeps "a,b"; Slurm prints a host list
		j.NodeNames = strings.Split(r.NodeList, ",")
		j.NodeList = sbatch.HostList(j.NodeNames)
	}
	return j, true
}
