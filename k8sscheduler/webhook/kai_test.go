package webhook

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A manifest written for KAI (schedulerName kai-scheduler) becomes Sluice's pod: the
// scheduler, the pod grouper and the ledger all see one name.
func TestAdmitTakesKAIPodsAsSluicePods(t *testing.T) {
	srv := newTestServer(t, nil)
	resp, got := admitPod(t, srv, podSpec{scheduler: "kai-scheduler", labels: map[string]string{"kai.scheduler/queue": "nlp"},
		annotations: map[string]string{"gpu-fraction": "0.5"}}.pod("plain"))
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if got.Spec.SchedulerName != "sluice" || got.Labels["sluice.dev/queue"] != "nlp" {
		t.Errorf("schedulerName %q queue %q, want sluice and nlp", got.Spec.SchedulerName, got.Labels["sluice.dev/queue"])
	}
	if env := strings.Join(envOf(got.Spec.Containers[0]), " "); !strings.Contains(env, devicesRef) {
		t.Errorf("env %s, want the shared GPU's", env)
	}
	// Sluice's own pods keep their name and get no extra op.
	resp, got = admitPod(t, srv, podSpec{}.pod("plain"))
	if !resp.Allowed || got.Spec.SchedulerName != "sluice" || strings.Contains(string(resp.Patch), "schedulerName") {
		t.Errorf("sluice pod: allowed %v, schedulerName %q, patch %s", resp.Allowed, got.Spec.SchedulerName, resp.Patch)
	}
}

// An invalid KAI annotation is refused for a KAI pod as for Sluice's own.
func TestAdmitRefusesBadKAIAnnotations(t *testing.T) {
	srv := newTestServer(t, nil)
	two := []corev1.Container{{Name: "sidecar", Image: "x"}, {Name: "gpu-workload", Image: "x"}}
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{"fraction above one", map[string]string{"gpu-fraction": "1.5"}, []string{`gpu-fraction="1.5"`, "(0,1)"}},
		{"container that is not there", map[string]string{"gpu-fraction": "0.5", "gpu-fraction-container-name": "gpu"},
			[]string{`gpu-fraction-container-name="gpu"`, "no container of that name", "sidecar", "gpu-workload"}},
		{"container without a share", map[string]string{"gpu-fraction-container-name": "gpu-workload"},
			[]string{"gpu-fraction-container-name", "only allowed together with gpu-fraction or gpu-memory"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := admitPod(t, srv, podSpec{scheduler: "kai-scheduler", annotations: tt.annotations, containers: two}.pod("plain"))
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("allowed %v result %+v, want a 422", resp.Allowed, resp.Result)
			}
			for _, w := range tt.want {
				if !strings.Contains(resp.Result.Message, w) {
					t.Errorf("message %q does not contain %q", resp.Result.Message, w)
				}
			}
		})
	}
}

// gpu-fraction-container-name gives the share to that container only (init or regular).
func TestAdmitGivesTheShareToTheNamedContainer(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, name := range []string{"gpu-workload", "warmup"} {
		_, got := admitPod(t, srv, podSpec{scheduler: "kai-scheduler",
			annotations: map[string]string{"gpu-memory": "2000", "gpu-fraction-container-name": name},
			init:        []corev1.Container{{Name: "warmup", Image: "x"}},
			containers:  []corev1.Container{{Name: "sidecar", Image: "x"}, {Name: "gpu-workload", Image: "x"}}}.pod("plain"))
		for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
			has := slices.Contains(envOf(c), devicesRef)
			if has != (c.Name == name) {
				t.Errorf("share to %s: container %s has the GPU env: %v", name, c.Name, has)
			}
		}
	}
}

// KAI's pod-group-name names the pod's group: the Sluice PodGroup the KAI mirror writes
// under the same name. A Sluice group the pod names itself wins.
func TestAdmitNamesTheKAIPodGroup(t *testing.T) {
	srv := newTestServer(t, nil)
	_, got := admitPod(t, srv, podSpec{scheduler: "kai-scheduler", annotations: map[string]string{"pod-group-name": "gang"}}.pod("plain"))
	if got.Annotations["sluice.dev/pod-group"] != "gang" || got.Annotations["sluice.dev/pod-group-derived"] != "" {
		t.Errorf("annotations %v, want sluice.dev/pod-group=gang, not derived", got.Annotations)
	}
	_, got = admitPod(t, srv, podSpec{annotations: map[string]string{"pod-group-name": "gang", "sluice.dev/pod-group": "mine"}}.pod("plain"))
	if got.Annotations["sluice.dev/pod-group"] != "mine" {
		t.Errorf("annotations %v, want the pod's own sluice.dev/pod-group", got.Annotations)
	}
}

// KAI's priorityClassName label gives the pod the class's priority, as naming the class in
// spec.priorityClassName would; a label naming no class is ignored, as KAI ignores it.
func TestAdmitAppliesThePriorityClassLabel(t *testing.T) {
	never := corev1.PreemptNever
	classes := map[string]*schedulingv1.PriorityClass{
		"inference": {ObjectMeta: metav1.ObjectMeta{Name: "inference"}, Value: 125, PreemptionPolicy: &never},
	}
	a := testAdmitter(t, nil)
	a.priorityClass = func(_ context.Context, name string) (*schedulingv1.PriorityClass, error) {
		if pc, ok := classes[name]; ok {
			return pc, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, name)
	}
	srv := serveAdmitter(t, a)
	_, got := admitPod(t, srv, podSpec{scheduler: "kai-scheduler", labels: map[string]string{"priorityClassName": "inference"}}.pod("plain"))
	if got.Spec.PriorityClassName != "inference" || got.Spec.Priority == nil || *got.Spec.Priority != 125 ||
		got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != never {
		t.Errorf("class %q priority %v policy %v, want inference 125 Never", got.Spec.PriorityClassName, got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	resp, got := admitPod(t, srv, podSpec{scheduler: "kai-scheduler", labels: map[string]string{"priorityClassName": "nonesuch"}}.pod("plain"))
	if !resp.Allowed || got.Spec.PriorityClassName != "" || got.Spec.Priority != nil {
		t.Errorf("unknown class: allowed %v class %q priority %v, want the pod as it was", resp.Allowed, got.Spec.PriorityClassName, got.Spec.Priority)
	}
}
