package v1alpha1

import (
	"strconv"
	"time"
)

// Values of the annotations the rig's kwok stages read to end a simulated container
// (SimDurationAnnotation, SimExitCodeAnnotation; test/cluster/kwok-stages.yaml).

// FormatSimDuration writes a SimDurationAnnotation value: a Go duration ("30s"), as kwok
// reads it.
func FormatSimDuration(d time.Duration) string { return d.String() }

// ParseSimDuration reads a SimDurationAnnotation value.
func ParseSimDuration(value string) (time.Duration, error) {
	return parseValue(SimDurationAnnotation, value, time.ParseDuration)
}

// FormatSimExitCode writes a SimExitCodeAnnotation value, in decimal.
func FormatSimExitCode(code int) string { return strconv.Itoa(code) }

// ParseSimExitCode reads a SimExitCodeAnnotation value.
func ParseSimExitCode(value string) (int, error) {
	return parseValue(SimExitCodeAnnotation, value, strconv.Atoi)
}
