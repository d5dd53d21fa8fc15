package podgrouper

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

// KAI's documented grouping per workload kind (docs/kai-compatibility.md).
func TestForPodGroupsAsKAIDocuments(t *testing.T) {
	inOrder := obj("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "cccccccccccc", nil, map[string]any{
		"startupPolicy": map[string]any{"startupPolicyOrder": "InOrder"},
		"replicatedJobs": []any{
			map[string]any{"name": "driver", "replicas": int64(1), "template": map[string]any{"spec": map[string]any{}}},
			map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{"parallelism": int64(3)}}},
		},
	})
	mpi := obj("kubeflow.org/v2beta1", "MPIJob", "mpi", "dddddddd", nil, map[string]any{
		"runPolicy":       map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(3)}},
		"mpiReplicaSpecs": map[string]any{"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(8)}},
	})
	for _, c := range []struct {
		name      string
		pod       *corev1.Pod
		owners    []*unstructured.Unstructured
		wantName  string
		wantOwner string
		wantMin   int32
	}{
		{"InOrder JobSet: one gang per replicated job", pod("js-workers-0-0", map[string]string{jobSetReplicatedJobLabel: "workers"}),
			[]*unstructured.Unstructured{inOrder}, "js-cccccccc-workers", "JobSet/js", 6},
		{"InOrder JobSet: the first job alone", pod("js-driver-0-0", map[string]string{jobSetReplicatedJobLabel: "driver"}),
			[]*unstructured.Unstructured{inOrder}, "js-cccccccc-driver", "JobSet/js", 1},
		{"MPIJob: minAvailable, not every replica", pod("mpi-worker-0", nil), []*unstructured.Unstructured{mpi}, "mpi-dddddddd", "MPIJob/mpi", 3},
		{"MPIJob in an Argo workflow: the MPIJob's gang", pod("mpi-worker-0", nil),
			[]*unstructured.Unstructured{mpi, obj("argoproj.io/v1alpha1", "Workflow", "wf", "eeeeeeee", nil, map[string]any{})}, "mpi-dddddddd", "MPIJob/mpi", 3},
		{"CronJob: each run's Job its own gang", pod("nightly-123-x", nil),
			[]*unstructured.Unstructured{job(t, "nightly-123", nil, nil, nil), obj("batch/v1", "CronJob", "nightly", "ffffffff", nil, map[string]any{})},
			"nightly-123-01234567", "Job/nightly-123", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			pg, err := ForPod(c.pod, c.owners, nil)
			if err != nil {
				t.Fatal(err)
			}
			owner := pg.OwnerReferences[0].Kind + "/" + pg.OwnerReferences[0].Name
			if pg.Name != c.wantName || owner != c.wantOwner || pg.Spec.MinMember != c.wantMin {
				t.Errorf("group %s owned by %s min %d, want %s owned by %s min %d", pg.Name, owner, pg.Spec.MinMember, c.wantName, c.wantOwner, c.wantMin)
			}
		})
	}
}

// KAI's priorityClassName label: the workload's wins over the pod's, which wins over the
// pod's spec; kai.scheduler/preemptibility states preemptibility outright.
func TestForPodReadsKAIPriorityLabels(t *testing.T) {
	labelled := func(c string) map[string]string { return map[string]string{kai.PriorityClassLabel: c} }
	specOnly := pod("p", nil)
	specOnly.Spec.PriorityClassName = "train"
	withLabel := pod("p", labelled("build"))
	withLabel.Spec.PriorityClassName = "train"
	for _, c := range []struct {
		name   string
		pod    *corev1.Pod
		owners []*unstructured.Unstructured
		want   string
	}{
		{"spec", specOnly, nil, "train"},
		{"pod label over spec", withLabel, nil, "build"},
		{"workload label over pod label", withLabel, []*unstructured.Unstructured{job(t, "j", nil, nil, labelled("inference"))}, "inference"},
	} {
		pg, err := ForPod(c.pod, c.owners, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Spec.PriorityClassName != c.want {
			t.Errorf("%s: priority class %q, want %q", c.name, pg.Spec.PriorityClassName, c.want)
		}
	}
	for label, want := range map[string]v1alpha1.Preemptibility{
		"non-preemptible": v1alpha1.NonPreemptible, "preemptible": v1alpha1.Preemptible, "sometimes": "",
	} {
		pg, err := ForPod(pod("p", nil), []*unstructured.Unstructured{job(t, "j", nil, nil, map[string]string{kai.PreemptibilityLabel: label})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Spec.Preemptibility != want {
			t.Errorf("label %q: preemptibility %q, want %q", label, pg.Spec.Preemptibility, want)
		}
	}
}
