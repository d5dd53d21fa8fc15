package kube

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// The node affinity written for --constraint, --nodelist and --exclude admits exactly the
// nodes Slurm would, as kube-scheduler's own matcher reads it.
func TestNodeAffinityOfSlurmOptions(t *testing.T) {
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	nodes := []*corev1.Node{
		node("n1", map[string]string{v1alpha1.FeatureLabelPrefix + "ib": "", "gpu": "h100"}),
		node("n2", map[string]string{v1alpha1.FeatureLabelPrefix + "ib": "true", "gpu": "a100"}),
		node("n3", map[string]string{"gpu": "h100"}),
		node("n4", nil),
	}
	for _, tc := range []struct {
		name string
		d    slurmapi.JobDesc
		want string
	}{
		{"feature", slurmapi.JobDesc{Constraint: "ib"}, "n1 n2"},
		{"and", slurmapi.JobDesc{Constraint: "ib&gpu=h100"}, "n1"},
		{"or", slurmapi.JobDesc{Constraint: "gpu=a100|gpu=h100"}, "n1 n2 n3"},
		{"label key", slurmapi.JobDesc{Constraint: "sluice.dev/feature.ib"}, "n1 n2"},
		{"nodelist", slurmapi.JobDesc{NodeList: []string{"n2", "n4"}}, "n2 n4"},
		{"exclude", slurmapi.JobDesc{Exclude: []string{"n1", "n3"}}, "n2 n4"},
		{"all three", slurmapi.JobDesc{Constraint: "ib|gpu=h100", NodeList: []string{"n1", "n3", "n4"}, Exclude: []string{"n1"}}, "n3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := map[string]string{}
			placementAnnotations(&tc.d, ann)
			var ns corev1.NodeSelector
			if err := unmarshal(ann[v1alpha1.NodeAffinityAnnotation], &ns); err != nil {
				t.Fatal(err)
			}
			req := nodeaffinity.NewRequiredNodeAffinity(nil, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &ns}})
			got := ""
			for _, n := range nodes {
				ok, err := req.Match(n)
				if err != nil {
					t.Fatalf("%s: %v", n.Name, err)
				}
				if ok {
					if got != "" {
						got += " "
					}
					got += n.Name
				}
			}
			if got != tc.want {
				t.Errorf("matches %q, want %q (affinity %s)", got, tc.want, ann[v1alpha1.NodeAffinityAnnotation])
			}
		})
	}
	ann := map[string]string{}
	placementAnnotations(&slurmapi.JobDesc{Exclusive: true, Switches: 1, SwitchWait: 10 * time.Minute}, ann)
	if ann[v1alpha1.ExclusiveAnnotation] != "true" || ann[v1alpha1.SwitchesAnnotation] != "1" || ann[v1alpha1.NodeAffinityAnnotation] != "" ||
		ann[v1alpha1.SwitchesWaitAnnotation] != "600" {
		t.Errorf("annotations %v", ann)
	}
	var back slurmapi.JobDesc
	readPlacement(ann, &back)
	if back.Switches != 1 || back.SwitchWait != 10*time.Minute || !back.Exclusive {
		t.Errorf("read back %+v", back)
	}
}

func unmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// A matching or (--constraint "ib&[r1|r2]") is one node affinity per choice, each
// admitting the nodes with the common features and that choice's; a partition list keeps
// the first partition in spec.partition and the list in an annotation.
func TestMatchingOrAndPartitionList(t *testing.T) {
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{v1alpha1.FeatureLabelPrefix + "ib": "", v1alpha1.FeatureLabelPrefix + "r1": ""}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{v1alpha1.FeatureLabelPrefix + "ib": "", v1alpha1.FeatureLabelPrefix + "r2": ""}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{v1alpha1.FeatureLabelPrefix + "r1": ""}}},
	}
	d := slurmapi.JobDesc{Constraint: "ib&[r1|r2]", Exclude: []string{"c"}, Partition: "h100,a100", Account: "nlp", Nodes: 1}
	pg := PodGroupFor(&d, 7)
	var choices []corev1.NodeSelector
	if err := unmarshal(pg.Annotations[v1alpha1.NodeAffinityChoicesAnnotation], &choices); err != nil || len(choices) != 2 {
		t.Fatalf("choices %v (%v)", pg.Annotations[v1alpha1.NodeAffinityChoicesAnnotation], err)
	}
	if pg.Annotations[v1alpha1.NodeAffinityAnnotation] != "" || pg.Annotations[v1alpha1.NodeConstraintAnnotation] != "--constraint=ib&[r1|r2] --exclude=c" {
		t.Errorf("annotations %v", pg.Annotations)
	}
	for i, want := range []string{"a", "b"} {
		req := nodeaffinity.NewRequiredNodeAffinity(nil, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &choices[i]}})
		got := ""
		for _, n := range nodes {
			if ok, _ := req.Match(n); ok {
				got += n.Name
			}
		}
		if got != want {
			t.Errorf("choice %d matches %q, want %q", i, got, want)
		}
	}
	if pg.Spec.Partition != "h100" || pg.Labels[v1alpha1.PartitionLabel] != "h100" || pg.Annotations[v1alpha1.PartitionsAnnotation] != "h100,a100" {
		t.Errorf("partition %q label %q list %q", pg.Spec.Partition, pg.Labels[v1alpha1.PartitionLabel], pg.Annotations[v1alpha1.PartitionsAnnotation])
	}
}
