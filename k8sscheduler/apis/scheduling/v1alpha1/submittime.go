package v1alpha1

import "time"

// SubmitTime is when the workload was submitted: the SubmitTimeAnnotation a Slurm job
// acknowledged in a batch carries (its PodGroup is created later), else the PodGroup's
// creation. squeue, the scheduler's ordering and the ledger all read it here.
func (pg *PodGroup) SubmitTime() time.Time {
	if t, err := time.Parse(time.RFC3339Nano, pg.Annotations[SubmitTimeAnnotation]); err == nil {
		return t
	}
	return pg.CreationTimestamp.Time
}
