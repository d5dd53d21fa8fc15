package kube

import (
	"strings"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// setView sets the job's state, reason, times, exit code and nodes from the one job read
// model (jobstate) over its group and pods; the Slurm API adds only the reason a job
// whose store was refused failed.
func setView(j *slurmapi.Job, job *jobstate.Job) {
	pg := job.Group
	v := job.View(time.Now())
	j.State, j.Reason = []string{string(v.State)}, v.Reason
	if v.Requeued {
		j.State = append(j.State, string(jobstate.Requeued))
	}
	if v.Completing {
		j.State = append(j.State, string(jobstate.Completing))
	}
	switch {
	case v.State == jobstate.Failed:
		if _, refused := storeRefused(pg); refused {
			j.Reason = reasonStoreRefused
		}
	}
	if parts := v1alpha1.ParsePartitions(pg.Annotations[v1alpha1.PartitionsAnnotation]); len(parts) > 0 && v.State == jobstate.Pending {
		j.Desc.Partition = strings.Join(parts, ",") // as Slurm shows -p a,b until the job starts, then where it runs
	}
	j.StartTime, j.EndTime, j.ExitCode = v.Start, v.End, int(v.ExitCode)
	nodes := pg.Status.Nodes // in member order, as the job's nodes are numbered
	if len(nodes) == 0 {
		nodes = v.Nodes
	}
	j.NodeNames, j.NodeList = nodes, sbatch.HostList(nodes)
	j.TRESAlloc = ""
	if len(nodes) > 0 {
		j.TRESAlloc = j.TRESReq
	}
}
