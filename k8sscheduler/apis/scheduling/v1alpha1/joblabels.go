package v1alpha1

import "strconv"

// Values of the labels on a job's pods (JobIDLabel's are in jobid.go).

// FormatNodeIndex writes a NodeIndexLabel value: the pod's SLURM_NODEID, in decimal.
func FormatNodeIndex(index int) string { return strconv.Itoa(index) }

// ParseNodeIndex reads a NodeIndexLabel value.
func ParseNodeIndex(value string) (int, error) {
	return parseValue(NodeIndexLabel, value, strconv.Atoi)
}
