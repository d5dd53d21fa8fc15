package v1alpha1

import (
	"fmt"
	"strconv"
	"time"
)

// Values of the annotations on a Slurm job's PodGroup that the Slurm API writes and the
// scheduler reads (SubmitTimeAnnotation's are in submittime.go, the placement ones in
// placement.go and nodeaffinity.go).

// FormatPriority writes a PriorityAnnotation value, in decimal.
func FormatPriority(priority int64) string { return strconv.FormatInt(priority, 10) }

// ParsePriority reads a PriorityAnnotation value.
func ParsePriority(value string) (int64, error) {
	p, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %w", PriorityAnnotation, err)
	}
	return p, nil
}

// FormatNice writes a NiceAnnotation value, in decimal.
func FormatNice(nice int64) string { return strconv.FormatInt(nice, 10) }

// ParseNice reads a NiceAnnotation value.
func ParseNice(value string) (int64, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %w", NiceAnnotation, err)
	}
	return n, nil
}

// FormatBeginTime writes a BeginTimeAnnotation value: RFC 3339 in UTC, to the second
// (sbatch --begin names no finer time).
func FormatBeginTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseBeginTime reads a BeginTimeAnnotation value.
func ParseBeginTime(value string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, fmt.Errorf("annotation %s: %w", BeginTimeAnnotation, err)
	}
	return t, nil
}
