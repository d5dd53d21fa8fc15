package v1alpha1

import (
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
	return parseValue(PriorityAnnotation, value, decimalInt64)
}

// FormatNice writes a NiceAnnotation value, in decimal.
func FormatNice(nice int64) string { return strconv.FormatInt(nice, 10) }

// ParseNice reads a NiceAnnotation value.
func ParseNice(value string) (int64, error) {
	return parseValue(NiceAnnotation, value, decimalInt64)
}

// FormatBeginTime writes a BeginTimeAnnotation value: RFC 3339 in UTC, to the second
// (sbatch --begin names no finer time).
func FormatBeginTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseBeginTime reads a BeginTimeAnnotation value.
func ParseBeginTime(value string) (time.Time, error) {
	return parseValue(BeginTimeAnnotation, value, rfc3339)
}
