package v1alpha1

import (
	"fmt"
	"strconv"
)

// Values of the labels on a job's pods (JobIDLabel's are in jobid.go).

// FormatNodeIndex writes a NodeIndexLabel value: the pod's SLURM_NODEID, in decimal.
func FormatNodeIndex(index int) string { return strconv.Itoa(index) }

// ParseNodeIndex reads a NodeIndexLabel value.
func ParseNodeIndex(value string) (int, error) {
	i, err := strconv.Atoi(value)
	if err != nil {
		return 0, fmt.Errorf("label %s: %w", NodeIndexLabel, err)
	}
	return i, nil
}
