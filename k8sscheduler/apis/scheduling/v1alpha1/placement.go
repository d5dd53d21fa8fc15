package v1alpha1

import (
	"strconv"
	"strings"
	"time"
)

// Values of what a Slurm job asks of its nodes, written on its PodGroup by the Slurm API
// (docs/placement.md) and read by the scheduler and by the Slurm API's job views. The node
// affinity itself is in nodeaffinity.go.

// FormatPartitions writes a PartitionsAnnotation value: the names comma-separated, in
// order of preference.
func FormatPartitions(partitions []string) string { return strings.Join(partitions, ",") }

// ParsePartitions reads a PartitionsAnnotation value; an empty value lists none.
func ParsePartitions(value string) []string {
	if value == "" {
		return nil
	}
	return strings.Split(value, ",")
}

// FormatExclusive writes an ExclusiveAnnotation value. The Slurm API writes it only for
// an exclusive job ("true").
func FormatExclusive(exclusive bool) string { return strconv.FormatBool(exclusive) }

// ParseExclusive reads an ExclusiveAnnotation value as strconv.ParseBool does; a value
// that is not a boolean (or none) is not exclusive.
func ParseExclusive(value string) bool {
	b, _ := strconv.ParseBool(value)
	return b
}

// FormatSwitches writes a SwitchesAnnotation value: sbatch --switches's count, in decimal.
func FormatSwitches(switches int) string { return strconv.Itoa(switches) }

// ParseSwitches reads a SwitchesAnnotation value.
func ParseSwitches(value string) (int, error) {
	return parseValue(SwitchesAnnotation, value, strconv.Atoi)
}

// FormatSwitchesWait writes a SwitchesWaitAnnotation value: whole seconds, in decimal
// (a part of a second is dropped).
func FormatSwitchesWait(wait time.Duration) string {
	return strconv.FormatInt(int64(wait/time.Second), 10)
}

// ParseSwitchesWait reads a SwitchesWaitAnnotation value.
func ParseSwitchesWait(value string) (time.Duration, error) {
	s, err := parseValue(SwitchesWaitAnnotation, value, decimalInt64)
	return time.Duration(s) * time.Second, err
}

// NodeConstraint is what a user wrote for a job's node affinity, the value of
// NodeConstraintAnnotation: sbatch's --constraint, --nodelist and --exclude as given
// (host lists in Slurm's compressed form, e.g. "n[1-3]"); "" where not given.
// +kubebuilder:object:generate=false
type NodeConstraint struct {
	Constraint string
	NodeList   string
	Exclude    string
}

// Format writes the options as a NodeConstraintAnnotation value, the text a user reads
// when the job waits for them, e.g. "--constraint=h100&ib --exclude=n3".
func (c NodeConstraint) Format() string {
	var parts []string
	for _, o := range []struct{ name, value string }{{"--constraint", c.Constraint}, {"--nodelist", c.NodeList}, {"--exclude", c.Exclude}} {
		if o.value != "" {
			parts = append(parts, o.name+"="+o.value)
		}
	}
	return strings.Join(parts, " ")
}

// ParseNodeConstraint reads a NodeConstraintAnnotation value; options it does not know
// are left out.
func ParseNodeConstraint(value string) NodeConstraint {
	var c NodeConstraint
	for _, opt := range strings.Fields(value) {
		name, v, _ := strings.Cut(opt, "=")
		switch name {
		case "--constraint":
			c.Constraint = v
		case "--nodelist":
			c.NodeList = v
		case "--exclude":
			c.Exclude = v
		}
	}
	return c
}

// FeatureLabel is the node label key that gives a node the Slurm feature name.
func FeatureLabel(name string) string { return FeatureLabelPrefix + name }

// FeatureOfLabel reads the feature a node label key gives; ok is false for a key that
// gives none.
func FeatureOfLabel(key string) (name string, ok bool) {
	name, ok = strings.CutPrefix(key, FeatureLabelPrefix)
	return name, ok && name != ""
}
