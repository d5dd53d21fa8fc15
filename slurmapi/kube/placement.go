package kube

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// placementAnnotations records what the job asks of its nodes on its PodGroup, for the
// scheduler (docs/placement.md): --constraint, --nodelist and --exclude as one required
// node affinity, --exclusive and --switches.
func placementAnnotations(d *slurmapi.JobDesc, ann map[string]string) {
	switch choices := nodeAffinities(d); {
	case len(choices) == 1:
		ann[v1alpha1.NodeAffinityAnnotation] = v1alpha1.FormatNodeAffinity(choices[0])
		ann[v1alpha1.NodeConstraintAnnotation] = constraintText(d)
	case len(choices) > 1: // a matching or: the scheduler tries each in order
		ann[v1alpha1.NodeAffinityChoicesAnnotation] = v1alpha1.FormatNodeAffinityChoices(choices)
		ann[v1alpha1.NodeConstraintAnnotation] = constraintText(d)
	}
	if parts := d.Partitions(); len(parts) > 1 {
		ann[v1alpha1.PartitionsAnnotation] = v1alpha1.FormatPartitions(parts)
	}
	if d.Exclusive {
		ann[v1alpha1.ExclusiveAnnotation] = v1alpha1.FormatExclusive(true)
	}
	if d.Switches > 0 {
		ann[v1alpha1.SwitchesAnnotation] = v1alpha1.FormatSwitches(d.Switches)
		if d.SwitchWait > 0 {
			ann[v1alpha1.SwitchesWaitAnnotation] = v1alpha1.FormatSwitchesWait(d.SwitchWait)
		}
	}
}

// nodeAffinities is the required node affinity of a job's pods, one per choice of a
// matching or (--constraint [a|b]), nil when it asks for no particular nodes.
func nodeAffinities(d *slurmapi.JobDesc) []corev1.NodeSelector {
	if d.Constraint == "" && len(d.NodeList) == 0 && len(d.Exclude) == 0 {
		return nil
	}
	choices := [][][]string{{nil}}
	if d.Constraint != "" {
		choices, _ = sbatch.ParseConstraintChoices(d.Constraint) // checked at submission
	}
	out := make([]corev1.NodeSelector, len(choices))
	for i, alts := range choices {
		out[i] = nodeAffinity(d, alts)
	}
	return out
}

// nodeAffinity is one choice's node affinity. Each alternative of --constraint is a term;
// with --nodelist, each is crossed with each listed node (a field selector takes one name
// per requirement); every term leaves out the --exclude nodes.
func nodeAffinity(d *slurmapi.JobDesc, alts [][]string) corev1.NodeSelector {
	var exclude []corev1.NodeSelectorRequirement
	for _, n := range d.Exclude {
		exclude = append(exclude, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{n}})
	}
	nodes := []string{""}
	if len(d.NodeList) > 0 {
		nodes = d.NodeList
	}
	var ns corev1.NodeSelector
	for _, alt := range alts {
		var exprs []corev1.NodeSelectorRequirement
		for _, f := range alt {
			exprs = append(exprs, featureRequirement(f))
		}
		for _, n := range nodes {
			t := corev1.NodeSelectorTerm{MatchExpressions: exprs, MatchFields: slices.Clone(exclude)}
			if n != "" {
				t.MatchFields = append(t.MatchFields, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}})
			}
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, t)
		}
	}
	return ns
}

// featureRequirement is what a node must carry to have a feature: KEY=VALUE is that
// label; a name with a slash is a label key that must exist; a plain name is the label
// sluice.dev/feature.NAME.
func featureRequirement(f string) corev1.NodeSelectorRequirement {
	if k, v, ok := strings.Cut(f, "="); ok {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}
	}
	if strings.Contains(f, "/") {
		return corev1.NodeSelectorRequirement{Key: f, Operator: corev1.NodeSelectorOpExists}
	}
	return corev1.NodeSelectorRequirement{Key: v1alpha1.FeatureLabel(f), Operator: corev1.NodeSelectorOpExists}
}

// constraintText is the job's node options as a user wrote them, for why-pending.
func constraintText(d *slurmapi.JobDesc) string {
	c := v1alpha1.NodeConstraint{Constraint: d.Constraint}
	if len(d.NodeList) > 0 {
		c.NodeList = sbatch.HostList(d.NodeList)
	}
	if len(d.Exclude) > 0 {
		c.Exclude = sbatch.HostList(d.Exclude)
	}
	return c.Format()
}

// nodeFeatures are a node's Slurm features: its sluice.dev/feature.NAME labels.
func nodeFeatures(labels map[string]string) []string {
	var out []string
	for k := range labels {
		if f, ok := v1alpha1.FeatureOfLabel(k); ok {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// readPlacement reads back what placementAnnotations wrote.
func readPlacement(ann map[string]string, d *slurmapi.JobDesc) {
	d.Exclusive = v1alpha1.ParseExclusive(ann[v1alpha1.ExclusiveAnnotation])
	d.Switches, _ = v1alpha1.ParseSwitches(ann[v1alpha1.SwitchesAnnotation])
	if w, err := v1alpha1.ParseSwitchesWait(ann[v1alpha1.SwitchesWaitAnnotation]); err == nil {
		d.SwitchWait = w
	}
	c := v1alpha1.ParseNodeConstraint(ann[v1alpha1.NodeConstraintAnnotation])
	d.Constraint = c.Constraint
	if c.NodeList != "" {
		d.NodeList, _ = sbatch.ParseNodeList(c.NodeList)
	}
	if c.Exclude != "" {
		d.Exclude, _ = sbatch.ParseNodeList(c.Exclude)
	}
}
