package examples

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
)

// The example workloads form the gangs their comments promise: the KAI pod
// alone in queue nlp, the Job's three pods together in vision on a100.
func TestExampleWorkloadsGroupAsDocumented(t *testing.T) {
	kai := mustOne(t, KAIJob).(*corev1.Pod)
	pg, err := podgrouper.ForPod(kai, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.Queue != "nlp" || pg.Spec.MinMember != 1 {
		t.Errorf("KAI pod: queue %q minMember %d, want nlp and 1", pg.Spec.Queue, pg.Spec.MinMember)
	}

	job := mustOne(t, GPUJob).(*batchv1.Job)
	job.UID = "job-uid"
	owner, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
	pod.Name = job.Name + "-0"
	pg, err = podgrouper.ForPod(pod, []*unstructured.Unstructured{{Object: owner}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.Queue != "vision" || pg.Spec.MinMember != 3 || pg.Spec.Partition != "a100" {
		t.Errorf("GPU Job: queue %q minMember %d partition %q, want vision, 3, a100", pg.Spec.Queue, pg.Spec.MinMember, pg.Spec.Partition)
	}
}

func mustOne(t *testing.T, name string) runtime.Object {
	t.Helper()
	objs, err := Objects(name)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", name, len(objs), err)
	}
	return objs[0]
}
