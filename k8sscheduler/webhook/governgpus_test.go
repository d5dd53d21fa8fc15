package webhook

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// governedReview is a pod creation (old == nil) or update in the review the API server
// would send, as user.
func governedReview(t *testing.T, pod, old *corev1.Pod, user string) []byte {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + t.Name()),
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: pod.Namespace,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: mustJSON(t, pod)},
		UserInfo:  authenticationv1.UserInfo{Username: user},
	}
	if old != nil {
		req.Operation = admissionv1.Update
		req.OldObject = runtime.RawExtension{Raw: mustJSON(t, old)}
	}
	return mustJSON(t, admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
}

func withTolerations(p *corev1.Pod, tol ...corev1.Toleration) *corev1.Pod {
	p.Spec.Tolerations = append(p.Spec.Tolerations, tol...)
	return p
}

func ownedByDaemonSet(p *corev1.Pod) *corev1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "dcgm-exporter", UID: "u1", Controller: &yes}}
	return p
}

func resources(name string, n int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceName(name): *resource.NewQuantity(n, resource.DecimalSI)}}
}

var (
	taintKey   = corev1.Toleration{Key: v1alpha1.GPUTaint, Operator: corev1.TolerationOpExists}
	everyKey   = corev1.Toleration{Operator: corev1.TolerationOpExists}
	otherKey   = corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}
	executeKey = corev1.Toleration{Key: v1alpha1.GPUTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
)

func TestGovernGPUs(t *testing.T) {
	gpuPod := func(ns string) *corev1.Pod {
		return podSpec{scheduler: "default-scheduler", containers: []corev1.Container{{Name: "train", Image: "x", Resources: gpus(8)}}}.pod(ns)
	}
	cpuPod := func(ns string) *corev1.Pod { return podSpec{scheduler: "default-scheduler"}.pod(ns) }
	sluicePod := func(ns string) *corev1.Pod {
		return podSpec{containers: []corev1.Container{{Name: "train", Image: "x", Resources: gpus(1)}}}.pod(ns)
	}
	type result int
	const (
		allowed result = iota // untouched
		adopted               // Sluice's now, queue and toleration added
		mutated               // a Sluice pod, admitted as before plus the toleration
		refused
	)
	tests := []struct {
		name   string
		action string // "" for the mode off
		pod    *corev1.Pod
		old    *corev1.Pod // an update
		user   string
		want   result
		says   []string // in the refusal
	}{
		{name: "off: GPU pod of kube-scheduler untouched", pod: gpuPod("plain"), want: allowed},
		{name: "off: taint toleration untouched", pod: withTolerations(cpuPod("plain"), taintKey), want: allowed},
		{name: "adopt: GPU pod", action: ActionAdopt, pod: gpuPod("nlp-team"), want: adopted},
		{name: "adopt: init container GPU", action: ActionAdopt, want: adopted,
			pod: podSpec{scheduler: "default-scheduler", init: []corev1.Container{{Name: "warm", Image: "x", Resources: gpus(1)}}}.pod("plain")},
		{name: "adopt: MIG slice", action: ActionAdopt, want: adopted,
			pod: podSpec{scheduler: "default-scheduler", containers: []corev1.Container{{Name: "m", Image: "x", Resources: resources("nvidia.com/mig-1g.10gb", 1)}}}.pod("plain")},
		{name: "adopt: shared GPU resource", action: ActionAdopt, want: adopted,
			pod: podSpec{scheduler: "default-scheduler", containers: []corev1.Container{{Name: "m", Image: "x", Resources: resources("nvidia.com/gpu.shared", 1)}}}.pod("plain")},
		{name: "adopt: GPU pod already tolerating the taint", action: ActionAdopt, pod: withTolerations(gpuPod("plain"), everyKey), want: adopted},
		{name: "refuse: GPU pod", action: ActionRefuse, pod: gpuPod("plain"), want: refused,
			says: []string{`container "train" requests nvidia.com/gpu`, `scheduler "default-scheduler"`, "spec.schedulerName: sluice", "webhook.governGPUs", "exemptNamespaces"}},
		{name: "refuse: zero GPUs is no GPU pod", action: ActionRefuse, want: allowed,
			pod: podSpec{scheduler: "default-scheduler", containers: []corev1.Container{{Name: "m", Image: "x", Resources: gpus(0)}}}.pod("plain")},
		{name: "refuse: CPU pod untouched", action: ActionRefuse, pod: cpuPod("plain"), want: allowed},
		{name: "refuse: exempt namespace", action: ActionRefuse, pod: gpuPod("kube-system"), want: allowed},
		{name: "adopt: exempt namespace", action: ActionAdopt, pod: gpuPod("kube-system"), want: allowed},
		{name: "refuse: Sluice's own pods", action: ActionRefuse, pod: gpuPod("plain"), user: "system:serviceaccount:sluice-system:sluice", want: allowed},
		{name: "adopt: forged toleration of the taint", action: ActionAdopt, pod: withTolerations(cpuPod("plain"), taintKey), want: refused,
			says: []string{"tolerates a toleration of taint sluice.dev/gpu:NoSchedule", "Remove the toleration"}},
		{name: "refuse: toleration of every key", action: ActionRefuse, pod: withTolerations(cpuPod("plain"), everyKey), want: refused},
		{name: "refuse: another taint's toleration", action: ActionRefuse, pod: withTolerations(cpuPod("plain"), otherKey), want: allowed},
		{name: "refuse: NoExecute only does not tolerate NoSchedule", action: ActionRefuse, pod: withTolerations(cpuPod("plain"), executeKey), want: allowed},
		{name: "adopt: DaemonSet without GPU tolerating everything", action: ActionAdopt, pod: ownedByDaemonSet(withTolerations(cpuPod("plain"), everyKey)), want: allowed},
		{name: "adopt: DaemonSet with GPU", action: ActionAdopt, pod: ownedByDaemonSet(gpuPod("plain")), want: refused,
			says: []string{`DaemonSet "dcgm-exporter"`, "cannot place a DaemonSet's pods", "exemptNamespaces"}},
		{name: "refuse: DaemonSet with GPU", action: ActionRefuse, pod: ownedByDaemonSet(gpuPod("plain")), want: refused},
		{name: "adopt: DaemonSet with GPU in an exempt namespace", action: ActionAdopt, pod: ownedByDaemonSet(gpuPod("kube-system")), want: allowed},
		{name: "adopt: GPU pod bound at creation", action: ActionAdopt, want: refused,
			pod:  func() *corev1.Pod { p := gpuPod("plain"); p.Spec.NodeName = "h100-0"; return p }(),
			says: []string{`spec.nodeName "h100-0"`, "bypasses every scheduler", "Leave spec.nodeName unset"}},
		{name: "adopt: tolerating pod bound at creation", action: ActionAdopt, want: refused,
			pod: func() *corev1.Pod {
				p := withTolerations(cpuPod("plain"), taintKey)
				p.Spec.NodeName = "h100-0"
				return p
			}()},
		{name: "adopt: CPU pod bound at creation", action: ActionAdopt, want: allowed,
			pod: func() *corev1.Pod { p := cpuPod("plain"); p.Spec.NodeName = "cpu-0"; return p }()},
		{name: "adopt: Sluice pod bound at creation", action: ActionAdopt, want: refused,
			pod:  func() *corev1.Pod { p := sluicePod("plain"); p.Spec.NodeName = "h100-0"; return p }(),
			says: []string{`spec.nodeName "h100-0"`}},
		{name: "adopt: Sluice pod gets the toleration", action: ActionAdopt, pod: sluicePod("plain"), want: mutated},
		{name: "adopt: Sluice pod in an exempt namespace gets it too", action: ActionAdopt, pod: sluicePod("kube-system"), want: mutated},
		{name: "refuse: toleration added on update", action: ActionRefuse, old: cpuPod("plain"),
			pod: withTolerations(cpuPod("plain"), everyKey), want: refused, says: []string{"may not be given a toleration of taint sluice.dev/gpu"}},
		{name: "adopt: toleration kept on update", action: ActionAdopt, old: withTolerations(cpuPod("plain"), everyKey),
			pod: withTolerations(cpuPod("plain"), everyKey), want: allowed},
		{name: "adopt: DaemonSet pod without GPU gains a toleration", action: ActionAdopt, old: ownedByDaemonSet(cpuPod("plain")),
			pod: ownedByDaemonSet(withTolerations(cpuPod("plain"), taintKey)), want: allowed},
		{name: "adopt: toleration added in an exempt namespace", action: ActionAdopt, old: cpuPod("kube-system"),
			pod: withTolerations(cpuPod("kube-system"), taintKey), want: allowed},
		{name: "off: toleration added on update", old: cpuPod("plain"), pod: withTolerations(cpuPod("plain"), taintKey), want: allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testAdmitter(t, nil)
			a.self = []string{"system:serviceaccount:sluice-system:sluice"}
			if tt.action != "" {
				var err error
				if a.gpus, err = (GovernGPUs{Enabled: true, Action: tt.action}).withDefaults(); err != nil {
					t.Fatal(err)
				}
			}
			user := tt.user
			if user == "" {
				user = "mallory"
			}
			resp, out := admitRequest(t, serveAdmitter(t, a), tt.pod, governedReview(t, tt.pod, tt.old, user))
			if tt.want == refused {
				if resp.Allowed || resp.Result == nil || resp.Result.Code != 403 {
					t.Fatalf("allowed %v result %+v, want a 403", resp.Allowed, resp.Result)
				}
				for _, s := range tt.says {
					if !strings.Contains(resp.Result.Message, s) {
						t.Errorf("refusal %q does not say %q", resp.Result.Message, s)
					}
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused: %s", resp.Result.Message)
			}
			switch tt.want {
			case allowed:
				if resp.Patch != nil {
					t.Errorf("patched %s, want the pod untouched", resp.Patch)
				}
			case adopted, mutated:
				if out.Spec.SchedulerName != "sluice" || out.Labels[v1alpha1.QueueLabel] == "" {
					t.Errorf("scheduler %q queue %q, want Sluice's pod with a queue", out.Spec.SchedulerName, out.Labels[v1alpha1.QueueLabel])
				}
				if !toleratesGPUTaint(out) {
					t.Errorf("tolerations %+v, want the GPU taint's", out.Spec.Tolerations)
				}
				if n := len(out.Spec.Tolerations) - len(tt.pod.Spec.Tolerations); n > 1 || (n == 1 && toleratesGPUTaint(tt.pod)) {
					t.Errorf("tolerations %+v from %+v: one added at most, none when one already tolerates", out.Spec.Tolerations, tt.pod.Spec.Tolerations)
				}
			}
		})
	}
}

// The adopted pod's queue is its namespace's, as for a pod that named Sluice itself.
func TestGovernGPUsAdoptChargesTheNamespaceQueue(t *testing.T) {
	a := testAdmitter(t, nil)
	a.gpus, _ = GovernGPUs{Enabled: true}.withDefaults()
	pod := podSpec{scheduler: "default-scheduler", containers: []corev1.Container{{Name: "train", Image: "x", Resources: gpus(8)}}}.pod("nlp-team")
	resp, out := admitRequest(t, serveAdmitter(t, a), pod, governedReview(t, pod, nil, "mallory"))
	if !resp.Allowed || out.Spec.SchedulerName != "sluice" || out.Labels[v1alpha1.QueueLabel] != "nlp" {
		t.Fatalf("allowed %v scheduler %q queue %q, want adopted into queue nlp", resp.Allowed, out.Spec.SchedulerName, out.Labels[v1alpha1.QueueLabel])
	}
}

func TestGovernGPUsSettings(t *testing.T) {
	g, err := GovernGPUs{Enabled: true}.withDefaults()
	if err != nil || g.Action != ActionAdopt || strings.Join(g.ExemptNamespaces, ",") != "kube-system,kube-public,kube-node-lease" {
		t.Errorf("defaults %+v %v", g, err)
	}
	if _, err := (GovernGPUs{Enabled: true, Action: "ignore"}).withDefaults(); err == nil || !strings.Contains(err.Error(), "adopt or refuse") {
		t.Errorf("bad action: %v", err)
	}
	if _, err := (GovernGPUs{Enabled: true, ExemptNamespaces: []string{"a']"}}).withDefaults(); err == nil {
		t.Error("a namespace that is no DNS label was accepted")
	}
	if g, err := (GovernGPUs{Action: "ignore"}).withDefaults(); err != nil || g.Enabled {
		t.Errorf("off: %+v %v, want nothing checked", g, err)
	}
}

func TestIsGPUResource(t *testing.T) {
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "nvidia.com/gpu.shared": true, "nvidia.com/mig-1g.10gb": true, "nvidia.com/mig-3g.40gb": true,
		"nvidia.com/gpumem": false, "cpu": false, "amd.com/gpu": false, "example.com/nvidia.com/gpu": false,
	} {
		if got := v1alpha1.IsGPUResource(name); got != want {
			t.Errorf("IsGPUResource(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestGPUPodsRegistration(t *testing.T) {
	reg := Registration{URL: "https://127.0.0.1:9443/mutate-pods", CABundle: []byte("ca"), SchedulerNames: []string{"sluice", "kai-scheduler"},
		GovernGPUs: GovernGPUs{Enabled: true, ExemptNamespaces: []string{"kube-system", "sluice-system"}}, Users: []string{"system:serviceaccount:sluice-system:sluice"}}
	cfg, err := reg.configuration()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Webhooks) != 2 || cfg.Webhooks[0].Name != WebhookName || cfg.Webhooks[1].Name != GPUPodsWebhookName {
		t.Fatalf("webhooks %d, want %s and %s", len(cfg.Webhooks), WebhookName, GPUPodsWebhookName)
	}
	sluice, gpu := cfg.Webhooks[0], cfg.Webhooks[1]
	if sluice.NamespaceSelector != nil || len(sluice.Rules[0].Operations) != 1 {
		t.Errorf("the Sluice pods' webhook changed: %+v", sluice)
	}
	if *gpu.ClientConfig.URL != *sluice.ClientConfig.URL || *gpu.FailurePolicy != "Fail" {
		t.Errorf("client %+v failure policy %s", gpu.ClientConfig, *gpu.FailurePolicy)
	}
	if ops := gpu.Rules[0].Operations; len(ops) != 2 || ops[0] != "CREATE" || ops[1] != "UPDATE" {
		t.Errorf("operations %v, want CREATE and UPDATE", ops)
	}
	sel := gpu.NamespaceSelector.MatchExpressions
	if len(sel) != 1 || sel[0].Key != "kubernetes.io/metadata.name" || sel[0].Operator != metav1.LabelSelectorOpNotIn || strings.Join(sel[0].Values, ",") != "kube-system,sluice-system" {
		t.Errorf("namespace selector %+v", sel)
	}
	var exprs []string
	for _, c := range gpu.MatchConditions {
		exprs = append(exprs, c.Expression)
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{"in ['sluice', 'kai-scheduler']", "'nvidia.com/mig-'", "'sluice.dev/gpu'", "oldObject.spec.?tolerations",
		"request.userInfo.username in ['system:serviceaccount:sluice-system:sluice']", "'DaemonSet'"} {
		if !strings.Contains(all, want) {
			t.Errorf("match conditions do not say %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "POD") {
		t.Errorf("a placeholder left in the match conditions:\n%s", all)
	}
	reg.GovernGPUs.ExemptNamespaces = []string{"Bad_Name"}
	if _, err := reg.configuration(); err == nil {
		t.Error("an exempt namespace that is no DNS label was accepted")
	}
}
