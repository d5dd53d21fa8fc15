package scheduler

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Groups of one (bare pods the webhook named and numbered) are placed with no PodGroup
// written; one that has to wait gets its PodGroup, under its own job id, saying why; one
// evicted for an under-quota queue gets its PodGroup with the Evicted condition.
func TestGroupsOfOne(t *testing.T) {
	e := start(t)
	e.queue("one-a", "one", 0)
	e.queue("one-b", "one", 1)
	placed := []string{e.groupOfOne("a-0", "one-a", 9100), e.groupOfOne("a-1", "one-a", 9101)}
	e.waitBound(placed, waitLong)
	for _, name := range placed {
		if pg, err := e.podGroup(name); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s was placed at once, yet has a PodGroup (%v, err %v)", name, pg != nil, err)
		}
	}

	waiting := e.groupOfOne("a-2", "one-a", 9102)
	cond := e.condition(waiting, v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if cond.Reason == "" || cond.Message == "" {
		t.Errorf("the waiting pod's PodGroup does not say why it waits: %+v", cond)
	}
	pg, err := e.podGroup(waiting)
	if err != nil {
		t.Fatal(err)
	}
	pod := e.pod(waiting)
	if pg.Labels[v1alpha1.JobIDLabel] != "9102" || pg.Spec.Queue != "one-a" || pg.Spec.MinMember != 1 {
		t.Errorf("written PodGroup: job id %q queue %q minMember %d, want 9102, one-a, 1", pg.Labels[v1alpha1.JobIDLabel], pg.Spec.Queue, pg.Spec.MinMember)
	}
	if len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID != pod.UID {
		t.Errorf("written PodGroup owners %+v, want the pod %s", pg.OwnerReferences, pod.UID)
	}
	if !pg.SubmitTime().Equal(pod.CreationTimestamp.Time) {
		t.Errorf("submitted %v, want the pod's creation %v", pg.SubmitTime(), pod.CreationTimestamp.Time)
	}

	// Queue one-b is under its quota of 1: one of one-a's running pods makes room. The
	// evicted pod's PodGroup is owned by the pod, so the garbage collector removes it soon
	// after the pod goes: it is watched for from before the eviction, not looked up after.
	evicted := e.watchEvicted(placed)
	e.waitBound([]string{e.groupOfOne("b-0", "one-b", 9103)}, waitLong)
	select {
	case name := <-evicted:
		t.Logf("pod %s evicted, its PodGroup saying so", name)
	case <-time.After(waitLong):
		t.Fatalf("neither of %v was evicted with its PodGroup saying so (reason %s)", placed, conditionReason(string(bridge.EvictReclaim)))
	}
}

// watchEvicted reports the first of names whose PodGroup shows the reclaim's Evicted
// condition, watching from now until the test ends.
func (e *env) watchEvicted(names []string) <-chan string {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.rig.RESTConfig(), client.Options{Scheme: e.crs.Scheme()})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.PodGroupList{}, client.InNamespace(e.ns))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	out := make(chan string, 1)
	go func() {
		for ev := range w.ResultChan() {
			pg, ok := ev.Object.(*v1alpha1.PodGroup)
			if !ok || !slices.Contains(names, pg.Name) {
				continue
			}
			for _, c := range pg.Status.Conditions {
				if c.Type == v1alpha1.PodGroupConditionEvicted && c.Reason == conditionReason(string(bridge.EvictReclaim)) {
					out <- pg.Name
					return
				}
			}
		}
	}()
	return out
}

// groupOfOne creates a one-GPU bare pod in partition "one" as the webhook admits it with
// job ids: named group, derived mark, job id.
func (e *env) groupOfOne(name, queue string, id int) string {
	e.t.Helper()
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), v1alpha1.GPUResource: resource.MustParse("1")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns,
		Labels:      map[string]string{v1alpha1.QueueLabel: queue, v1alpha1.PartitionLabel: "one", v1alpha1.JobIDLabel: strconv.Itoa(id)},
		Annotations: map[string]string{v1alpha1.PodGroupAnnotation: name, v1alpha1.PodGroupDerivedAnnotation: "true"}},
		Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, Containers: []corev1.Container{{
			Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req, Limits: gpuLimit(1)}}}}}
	if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
	return name
}

func (e *env) podGroup(name string) (*v1alpha1.PodGroup, error) {
	pg := &v1alpha1.PodGroup{}
	return pg, e.crs.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, pg)
}
