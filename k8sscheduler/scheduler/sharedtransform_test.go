package scheduler

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// fullPod is a pod as the API server returns it, with what no reader needs beside what
// some reader does.
func fullPod(schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels:          map[string]string{"app": "x", v1alpha1.ValidationLabel: "n1"},
			Annotations:     map[string]string{"note": "y", corev1.MirrorPodAnnotationKey: "m", v1alpha1.NodeFaultAnnotation: "xid"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", UID: "o1"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, NodeName: "n1",
			Volumes: []corev1.Volume{
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
			},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep"},
				Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")},
					Limits: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}}},
			Tolerations:     []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			SecurityContext: &corev1.PodSecurityContext{}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", ImageID: "sha256:abc", RestartCount: 2,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "steps"}}}}},
	}
}

func TestSharedTransformKeepsWhatReadersRead(t *testing.T) {
	var observed *corev1.Pod
	tf := SharedTransform([]string{"sluice", "kai"}, func(p *corev1.Pod) { observed = p })

	for _, name := range []string{"sluice", "kai"} {
		in := fullPod(name)
		want := fullPod(name) // in must stay whole: the observer may keep it
		obj, err := tf(in)
		if err != nil {
			t.Fatal(err)
		}
		got := obj.(*corev1.Pod)
		if observed != in || !reflect.DeepEqual(in, want) {
			t.Fatalf("%s: the observer did not see the whole pod, or the pod was changed", name)
		}
		if got.ManagedFields != nil || got.Status.PodIP != "" || got.Spec.Containers[0].Env != nil || got.Spec.Containers[0].Command != nil ||
			got.Status.ContainerStatuses[0].ImageID != "" || got.Spec.Containers[0].Image != "" || got.Spec.Containers[0].Resources.Limits != nil ||
			got.Spec.SecurityContext != nil {
			t.Errorf("%s: kept what no reader reads: %+v", name, got)
		}
		if len(got.Spec.Volumes) != 1 || got.Spec.Volumes[0].Name != "data" {
			t.Errorf("%s: volumes %+v, want only the claim", name, got.Spec.Volumes)
		}
		term := got.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 137 || term.Message != "steps" || got.Status.ContainerStatuses[0].RestartCount != 2 ||
			got.Status.Reason != "Evicted" || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != corev1.DisruptionTarget ||
			got.Status.Conditions[0].Reason != "PreemptionByScheduler" || got.Labels["app"] != "x" || got.Annotations["note"] != "y" ||
			len(got.Spec.Tolerations) != 1 || got.Spec.Containers[0].Resources.Requests.Name(v1alpha1.GPUResource, resource.DecimalSI).Value() != 1 {
			t.Errorf("%s: lost what the ledger, the lifecycle or the scheduler reads: %+v", name, got)
		}
	}

	got := mustTransform(t, tf, fullPod("default-scheduler")).(*corev1.Pod)
	if len(got.OwnerReferences) != 1 || got.Labels[v1alpha1.ValidationLabel] != "n1" || got.Annotations[corev1.MirrorPodAnnotationKey] != "m" ||
		got.Annotations[v1alpha1.NodeFaultAnnotation] != "xid" || got.Status.Phase != corev1.PodFailed || got.Spec.NodeName != "n1" {
		t.Errorf("another scheduler's pod lost what a drain or the scheduler reads: %+v", got)
	}
	if got.Annotations["note"] != "" || got.Spec.Tolerations != nil || got.Status.ContainerStatuses != nil || got.ManagedFields != nil {
		t.Errorf("another scheduler's pod kept what no reader reads: %+v", got)
	}
}

// Pods that ask alike hold one copy of their containers and tolerations; a pod that asks
// for something else, however little, holds its own.
func TestSharedTransformSharesWhatPodsAskAlike(t *testing.T) {
	tf := SharedTransform([]string{"sluice"}, nil)
	pod := func(name, gpus, toleration string) *corev1.Pod {
		p := fullPod("sluice")
		p.Name = name
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse(gpus)}
		p.Spec.Tolerations[0].Key = toleration
		return p
	}
	trim := func(p *corev1.Pod) *corev1.Pod { return mustTransform(t, tf, p).(*corev1.Pod) }
	a, b := trim(pod("a", "1", "k")), trim(pod("b", "1", "k"))
	c, d := trim(pod("c", "2", "k")), trim(pod("d", "1", "other"))
	same := func(x, y *corev1.Pod) (containers, tolerations bool) {
		return &x.Spec.Containers[0] == &y.Spec.Containers[0], &x.Spec.Tolerations[0] == &y.Spec.Tolerations[0]
	}
	if cs, ts := same(a, b); !cs || !ts {
		t.Errorf("two pods asking alike share containers %v, tolerations %v; want both", cs, ts)
	}
	if cs, _ := same(a, c); cs || c.Spec.Containers[0].Resources.Requests.Name(v1alpha1.GPUResource, resource.DecimalSI).Value() != 2 {
		t.Errorf("a pod asking for 2 GPUs shares the containers of one asking for 1: %+v", c.Spec.Containers)
	}
	if _, ts := same(a, d); ts || d.Spec.Tolerations[0].Key != "other" {
		t.Errorf("a pod with another toleration shares the tolerations of the first: %+v", d.Spec.Tolerations)
	}
	if len(a.Spec.Containers) != cap(a.Spec.Containers) {
		t.Error("a shared slice has room to append into")
	}
}

// Label and annotation keys, and the queue's and partition's values, are one string for
// all the pods that carry them; the labels stay what they were.
func TestSharedTransformInternsMetadataKeys(t *testing.T) {
	tf := SharedTransform([]string{"sluice"}, nil)
	pod := func(id string) *corev1.Pod {
		p := fullPod("sluice")
		// strings of their own, as each decoded pod has
		p.Labels = map[string]string{strings.Clone(v1alpha1.QueueLabel): strings.Clone("team-a"), strings.Clone(v1alpha1.JobIDLabel): id}
		return p
	}
	a, b := mustTransform(t, tf, pod("1")).(*corev1.Pod), mustTransform(t, tf, pod("2")).(*corev1.Pod)
	if !maps.Equal(a.Labels, map[string]string{v1alpha1.QueueLabel: "team-a", v1alpha1.JobIDLabel: "1"}) || b.Labels[v1alpha1.JobIDLabel] != "2" {
		t.Fatalf("labels changed: %v, %v", a.Labels, b.Labels)
	}
	keyOf := func(m map[string]string, want string) string {
		for k := range m {
			if k == want {
				return k
			}
		}
		return ""
	}
	for _, k := range []string{v1alpha1.QueueLabel, v1alpha1.JobIDLabel} {
		if unsafe.StringData(keyOf(a.Labels, k)) != unsafe.StringData(keyOf(b.Labels, k)) {
			t.Errorf("label key %s is two strings", k)
		}
	}
	if unsafe.StringData(a.Labels[v1alpha1.QueueLabel]) != unsafe.StringData(b.Labels[v1alpha1.QueueLabel]) {
		t.Error("the queue's name is two strings")
	}
}

// Pods that ask the same of their node share one nodeConstraints.
func TestPodsAskingAlikeShareConstraints(t *testing.T) {
	spec := func(key string) *corev1.PodSpec {
		return &corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: key, Operator: corev1.TolerationOpExists}}}
	}
	a, b, c := podConstraints(spec("gpu")), podConstraints(spec("gpu")), podConstraints(spec("other"))
	if a != b {
		t.Error("two pods tolerating the same taint have constraints of their own")
	}
	if a == c || c.tolerations[0].Key != "other" {
		t.Errorf("pods tolerating different taints share constraints: %+v", c)
	}
}

// The table forgets a slice once no pod holds it.
func TestSharedSlicesForgetWhatNoPodHolds(t *testing.T) {
	var table sharedSlices[corev1.Toleration, *corev1.Toleration]
	held := table.share([]corev1.Toleration{{Key: "kept"}})
	for i := range 8 {
		table.share([]corev1.Toleration{{Key: fmt.Sprint("dropped-", i)}})
	}
	// Cleanups run on a goroutine of their own after a collection: wait for them, up to
	// a bound no run comes near.
	for i := 0; i < 500 && table.len() > 1; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := table.len(); n != 1 {
		t.Errorf("the table holds %d slices, want 1 (the one still held)", n)
	}
	if again := table.share([]corev1.Toleration{{Key: "kept"}}); &again[0] != &held[0] {
		t.Error("a slice still held was not shared")
	}
}

func TestSharedTransformTrimsNodes(t *testing.T) {
	tf := SharedTransform([]string{"sluice"}, nil)
	in := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}, PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")},
			Allocatable: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")},
			Conditions:  []corev1.NodeCondition{{Type: "GPUHealthy", Status: corev1.ConditionFalse}},
			Images:      []corev1.ContainerImage{{Names: []string{"busybox"}}}, Addresses: []corev1.NodeAddress{{Address: "10.0.0.1"}}},
	}
	got := mustTransform(t, tf, in).(*corev1.Node)
	if got.ManagedFields != nil || got.Status.Images != nil || got.Status.Addresses != nil || got.Spec.PodCIDR != "" {
		t.Errorf("kept what no reader reads: %+v", got)
	}
	if got.Labels["l"] != "v" || got.Annotations["a"] != "b" || !got.Spec.Unschedulable || len(got.Spec.Taints) != 1 ||
		len(got.Status.Conditions) != 1 || got.Status.Capacity == nil || got.Status.Allocatable == nil {
		t.Errorf("lost what the scheduler, the recorder or remediation reads: %+v", got)
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "sluice"}}}}
	if mustTransform(t, tf, pg).(*v1alpha1.PodGroup).ManagedFields != nil {
		t.Error("a PodGroup kept its managed fields")
	}
}

func mustTransform(t *testing.T, tf func(any) (any, error), obj any) any {
	t.Helper()
	out, err := tf(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
