package jobstate

import (
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// admittedPod is a bare pod as admission names and numbers it.
func admittedPod(name, id string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ml", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0),
		Labels:      map[string]string{v1alpha1.JobIDLabel: id},
		Annotations: map[string]string{v1alpha1.PodGroupAnnotation: name + "-job" + id, v1alpha1.PodGroupDerivedAnnotation: "true"},
	}}
}

func TestAssembleFindsEveryJobOnce(t *testing.T) {
	train := group(v1alpha1.PodGroupRunning, false)
	trainPod := *pod(train, 0, "h100-0", corev1.PodRunning)
	trainPod.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: train.Name}

	waiting, written, renamed := admittedPod("waiting", "8"), admittedPod("written", "9"), admittedPod("renamed", "10")
	owned := admittedPod("owned", "11") // a Job's pod: its group is the Job's, never implied
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "x", UID: "x"}}
	userNamed := admittedPod("user-named", "12") // its PodGroup is the user's object
	delete(userNamed.Annotations, v1alpha1.PodGroupDerivedAnnotation)
	writtenGroup := *Implied(&written)
	// A written group whose pod is another pod of the same name now (the first was
	// deleted and recreated): the group no longer has a bare pod to act on.
	renamedGroup := *Implied(&renamed)
	renamed.UID = "uid-renamed-again"
	renamed.Annotations[v1alpha1.PodGroupAnnotation] = renamedGroup.Name

	// A pending Slurm job the REST API holds in its submit batch: no object yet.
	batched := v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-13", Namespace: "ml", Labels: map[string]string{v1alpha1.JobIDLabel: "13"}},
		Spec: v1alpha1.PodGroupSpec{Slurm: &v1alpha1.SlurmJob{User: "alice"}}}
	train.ResourceVersion = "5"

	jobs := Assemble([]v1alpha1.PodGroup{*train, writtenGroup, renamedGroup, writtenGroup, batched},
		[]corev1.Pod{trainPod, waiting, written, renamed, owned, userNamed})
	type want struct {
		key  string
		kind Kind
		pods int
		bare bool
	}
	wants := []want{
		{"ml/job-7", Stored, 1, false},
		{"ml/written-job9", Stored, 1, true},
		{"ml/renamed-job10", Stored, 1, false},
		{"ml/job-13", Batched, 0, false},
		{"ml/waiting-job8", ImpliedByPod, 1, true},
	}
	if len(jobs) != len(wants) {
		t.Fatalf("%d jobs, want %d: %+v", len(jobs), len(wants), jobs)
	}
	for i, w := range wants {
		j := jobs[i]
		if j.Key() != w.key || j.Kind != w.kind || len(j.Pods) != w.pods || (j.BarePod() != nil) != w.bare {
			t.Errorf("job %d: %s %s, %d pods, bare pod %v; want %+v", i, j.Key(), j.Kind, len(j.Pods), j.BarePod() != nil, w)
		}
	}
	if id := jobs[4].ID(); id != 8 {
		t.Errorf("implied job id %d, want 8", id)
	}
	if v := jobs[4].View(now); v.State != Pending {
		t.Errorf("a bare pod not bound reads %s, want PENDING", v.State)
	}
}

func TestImpliedOnlyForAdmittedBarePods(t *testing.T) {
	p := admittedPod("p", "3")
	if g := Implied(&p); g == nil || g.Name != "p-job3" || g.Spec.MinMember != 1 || v1alpha1.OwningPod(g).UID != p.UID {
		t.Errorf("Implied(bare pod) = %+v", g)
	}
	unnumbered := admittedPod("q", "")
	if Implied(&unnumbered) != nil {
		t.Error("a pod without a job id implies a group")
	}
	if k := PodGroupKey(&corev1.Pod{}); k != "" {
		t.Errorf("a pod naming no group has key %q", k)
	}
}

func TestFailureIsEveryEndButCompletedAndCancelled(t *testing.T) {
	for _, s := range []State{Pending, Running, Completed, Cancelled, Failed, Timeout, NodeFail, OutOfMemory, Preempted} {
		want := s == Failed || s == Timeout || s == NodeFail || s == OutOfMemory || s == Preempted
		if s.Failure() != want {
			t.Errorf("%s.Failure() = %v, want %v", s, s.Failure(), want)
		}
	}
}

// TestFirstDeletionDecides: a bare pod drained off a faulty node, stopped by its kubelet
// and removed by the kubelet's final delete (grace 0) a second later, reads NODE_FAIL
// (read alone, its moved deletionTimestamp once made it look ended before it: FAILED);
// with its first deletion request kept, its job ends when the drain asked it to go.
func TestFirstDeletionDecides(t *testing.T) {
	p := admittedPod("drained", "5")
	p.Annotations[v1alpha1.NodeFaultAnnotation] = "GPUXidError"
	p.Spec.NodeName, p.Status.Phase, p.Status.StartTime = "h100-3", corev1.PodRunning, &metav1.Time{Time: t0}
	grace, zero := int64(30), int64(0)
	asked := p.DeepCopy()
	asked.DeletionTimestamp, asked.DeletionGracePeriodSeconds = &metav1.Time{Time: t0.Add(100 * time.Second)}, &grace
	removed := asked.DeepCopy()
	removed.Status.Phase = corev1.PodFailed
	removed.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 143, Reason: "Error", FinishedAt: metav1.NewTime(t0.Add(71 * time.Second))}}}}
	removed.DeletionTimestamp, removed.DeletionGracePeriodSeconds = &metav1.Time{Time: t0.Add(72 * time.Second)}, &zero

	pg := Implied(&p)
	if v := Derive(pg, []*corev1.Pod{removed}, now); v.State != NodeFail || !v.End.Equal(t0.Add(72*time.Second)) {
		t.Errorf("the removed pod alone reads %s ending %v, want NODE_FAIL at its final delete %v", v.State, v.End, t0.Add(72*time.Second))
	}
	kept := WithFirstDeletion(asked, removed)
	if v := Derive(pg, []*corev1.Pod{kept}, now); v.State != NodeFail || !v.End.Equal(t0.Add(70*time.Second)) {
		t.Errorf("with its first deletion request kept it reads %s ending %v, want NODE_FAIL at the request %v", v.State, v.End, t0.Add(70*time.Second))
	}
	if removed.DeletionGracePeriodSeconds != &zero || *removed.DeletionGracePeriodSeconds != 0 {
		t.Error("WithFirstDeletion changed the object it was given")
	}
	if WithFirstDeletion(nil, removed) != removed || WithFirstDeletion(&p, removed) != removed {
		t.Error("without an earlier request the pod is returned as it is")
	}
}
