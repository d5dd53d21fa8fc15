package v1alpha1

import "time"

// SubmitTime is when the workload was submitted: the SubmitTimeAnnotation a Slurm job
// acknowledged in a batch carries (its PodGroup is created later), else the PodGroup's
// creation. squeue, the scheduler's ordering and the ledger all read it here.
func (pg *PodGroup) SubmitTime() time.Time {
	if t, err := ParseSubmitTime(pg.Annotations[SubmitTimeAnnotation]); err == nil {
		return t
	}
	return pg.CreationTimestamp.Time
}

// FormatSubmitTime writes a SubmitTimeAnnotation value: RFC 3339 in UTC, to the
// nanosecond, so jobs submitted in the same second keep their order.
func FormatSubmitTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseSubmitTime reads a SubmitTimeAnnotation value.
func ParseSubmitTime(value string) (time.Time, error) {
	return parseValue(SubmitTimeAnnotation, value, rfc3339Nano)
}
