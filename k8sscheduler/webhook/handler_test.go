package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// testNamespaces are the namespaces the handler tests' cache holds.
var testNamespaces = []*corev1.Namespace{
	{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	{ObjectMeta: metav1.ObjectMeta{Name: "nlp-team", Labels: map[string]string{"sluice.dev/queue": "nlp"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "kai-team", Labels: map[string]string{"kai.scheduler/queue": "vision"}}},
}

// newTestServer serves an admitter whose namespaces come from a client-go
// cache filled with testNamespaces, as the informer would fill it.
func newTestServer(t testing.TB, getter namespaceGetter) *httptest.Server {
	t.Helper()
	return serveAdmitter(t, testAdmitter(t, getter))
}

// testAdmitter is the admitter newTestServer serves, without an owner reader.
func testAdmitter(t testing.TB, getter namespaceGetter) *admitter {
	t.Helper()
	if getter == nil {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		for _, ns := range testNamespaces {
			if err := idx.Add(ns); err != nil {
				t.Fatal(err)
			}
		}
		lister := corelisters.NewNamespaceLister(idx)
		getter = func(_ context.Context, name string) (*corev1.Namespace, error) { return lister.Get(name) }
	}
	return &admitter{
		schedulerNames: []string{"sluice", "kai-scheduler"},
		defaultQueue:   "default",
		namespace:      getter,
	}
}

// serveAdmitter serves a over HTTP until the test ends.
func serveAdmitter(t testing.TB, a *admitter) *httptest.Server {
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv
}

// podSpec is a compact description of a test pod.
type podSpec struct {
	scheduler   string // default "sluice"
	labels      map[string]string
	annotations map[string]string
	containers  []corev1.Container
	init        []corev1.Container
}

func (p podSpec) pod(namespace string) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "train-", Namespace: namespace, Labels: p.labels, Annotations: p.annotations},
		Spec:       corev1.PodSpec{SchedulerName: p.scheduler, Containers: p.containers, InitContainers: p.init},
	}
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = "sluice"
	}
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
	}
	return pod
}

func gpus(n int64) corev1.ResourceRequirements {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": q}}
}

// reviewFor wraps a pod in a v1 AdmissionReview for its creation.
func reviewFor(t testing.TB, pod *corev1.Pod, op admissionv1.Operation) []byte {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("uid-" + t.Name()),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace,
			Operation: op,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body and returns the status code and, for a 200, the review.
func post(t *testing.T, srv *httptest.Server, body []byte) (int, *admissionv1.AdmissionReview, string) {
	t.Helper()
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(data)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatalf("response is not an AdmissionReview: %v\n%s", err, data)
	}
	return resp.StatusCode, &review, string(data)
}

// admitPod sends pod's creation through the handler and returns the
// response and the pod as the API server would store it after the patch.
func admitPod(t *testing.T, srv *httptest.Server, pod *corev1.Pod) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	return admitRequest(t, srv, pod, reviewFor(t, pod, admissionv1.Create))
}

// admitRequest is admitPod with the review given.
func admitRequest(t *testing.T, srv *httptest.Server, pod *corev1.Pod, request []byte) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	code, review, body := post(t, srv, request)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	resp := review.Response
	if resp == nil || resp.UID != types.UID("uid-"+t.Name()) || review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		t.Fatalf("response does not answer the request: %s", body)
	}
	if resp.Patch == nil {
		return resp, pod
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("patch does not decode: %v\n%s", err, resp.Patch)
	}
	patched, err := patch.Apply(mustJSON(t, pod))
	if err != nil {
		t.Fatalf("patch does not apply: %v\n%s", err, resp.Patch)
	}
	var out corev1.Pod
	if err := json.Unmarshal(patched, &out); err != nil {
		t.Fatal(err)
	}
	return resp, &out
}

// envOf renders a container's environment as NAME=value or NAME<-fieldPath.
func envOf(c corev1.Container) []string {
	var out []string
	for _, v := range c.Env {
		if v.ValueFrom != nil && v.ValueFrom.FieldRef != nil {
			out = append(out, v.Name+"<-"+v.ValueFrom.FieldRef.FieldPath)
		} else {
			out = append(out, v.Name+"="+v.Value)
		}
	}
	return out
}

const (
	devicesRef = "NVIDIA_VISIBLE_DEVICES<-metadata.annotations['sluice.dev/visible-devices']"
	portionRef = "SLUICE_GPU_PORTION<-metadata.annotations['sluice.dev/gpu-portion']"
	mpsRefs    = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE<-metadata.annotations['sluice.dev/mps-active-thread-percentage'] " +
		"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT<-metadata.annotations['sluice.dev/mps-pinned-device-mem-limit']"
)

func TestAdmitMutatesSluicePods(t *testing.T) {
	srv := newTestServer(t, nil)
	tests := []struct {
		name      string
		namespace string
		pod       podSpec
		wantQueue string
		wantEnv   map[string][]string // container name -> env after admission
		wantNoOp  bool                // no patch at all
	}{
		{name: "no queue anywhere: default", namespace: "plain", pod: podSpec{}, wantQueue: "default",
			wantEnv: map[string][]string{"main": nil}},
		{name: "namespace missing from cache: default", namespace: "created-a-moment-ago", pod: podSpec{}, wantQueue: "default"},
		{name: "KAI queue label", namespace: "plain",
			pod:       podSpec{labels: map[string]string{"kai.scheduler/queue": "team-a", "app": "x"}},
			wantQueue: "team-a"},
		{name: "own label wins and nothing changes", namespace: "nlp-team", wantNoOp: true,
			pod:       podSpec{labels: map[string]string{"sluice.dev/queue": "research", "kai.scheduler/queue": "team-a"}},
			wantQueue: "research"},
		{name: "empty queue label is defaulted", namespace: "nlp-team",
			pod: podSpec{labels: map[string]string{"sluice.dev/queue": ""}}, wantQueue: "nlp"},
		{name: "namespace queue label", namespace: "nlp-team", pod: podSpec{}, wantQueue: "nlp"},
		{name: "namespace KAI queue label", namespace: "kai-team", pod: podSpec{}, wantQueue: "vision"},
		{name: "pod KAI label wins over namespace", namespace: "nlp-team",
			pod: podSpec{labels: map[string]string{"kai.scheduler/queue": "team-a"}}, wantQueue: "team-a"},
		{name: "KAI scheduler name is handled too", namespace: "plain",
			pod: podSpec{scheduler: "kai-scheduler", annotations: map[string]string{"gpu-fraction": "0.5"}}, wantQueue: "default",
			wantEnv: map[string][]string{"main": {devicesRef, portionRef, mpsRefs}}},
		{name: "whole GPUs: the device plugin sets the devices, no env", namespace: "plain", wantQueue: "default",
			pod: podSpec{
				init: []corev1.Container{{Name: "fetch", Image: "busybox"}},
				containers: []corev1.Container{
					{Name: "train", Image: "pytorch", Resources: gpus(2), Env: []corev1.EnvVar{{Name: "EPOCHS", Value: "3"}}},
					{Name: "debug", Image: "cuda", Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}},
					{Name: "sidecar", Image: "busybox", Env: []corev1.EnvVar{}},
				},
			},
			wantEnv: map[string][]string{
				"fetch":   nil,
				"train":   {"EPOCHS=3"},
				"debug":   {"NVIDIA_VISIBLE_DEVICES=all"},
				"sidecar": nil,
			}},
		{name: "fraction: every container wired, user env kept", namespace: "plain", wantQueue: "default",
			pod: podSpec{
				annotations: map[string]string{"gpu-fraction": "0.5"},
				init:        []corev1.Container{{Name: "fetch", Image: "busybox"}},
				containers: []corev1.Container{
					{Name: "train", Image: "pytorch", Env: []corev1.EnvVar{{Name: "EPOCHS", Value: "3"}}},
					{Name: "debug", Image: "cuda", Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}},
				},
			},
			wantEnv: map[string][]string{
				"fetch": {devicesRef, portionRef, mpsRefs},
				"train": {"EPOCHS=3", devicesRef, portionRef, mpsRefs},
				"debug": {"NVIDIA_VISIBLE_DEVICES=all", portionRef, mpsRefs},
			}},
		{name: "GPU request of zero is no GPU pod", namespace: "plain", wantQueue: "default",
			pod:     podSpec{containers: []corev1.Container{{Name: "main", Image: "x", Resources: gpus(0)}}},
			wantEnv: map[string][]string{"main": nil}},
		{name: "fraction", namespace: "nlp-team", wantQueue: "nlp",
			pod:     podSpec{annotations: map[string]string{"gpu-fraction": "0.25"}},
			wantEnv: map[string][]string{"main": {devicesRef, portionRef, mpsRefs}}},
		{name: "fraction on two devices", namespace: "plain", wantQueue: "default",
			pod:     podSpec{annotations: map[string]string{"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}},
			wantEnv: map[string][]string{"main": {devicesRef, portionRef, mpsRefs}}},
		{name: "GPU memory", namespace: "plain", wantQueue: "default",
			pod:     podSpec{annotations: map[string]string{"gpu-memory": "20480"}},
			wantEnv: map[string][]string{"main": {devicesRef, portionRef, mpsRefs}}},
		{name: "everything already set: no patch", namespace: "plain", wantNoOp: true, wantQueue: "q",
			pod: podSpec{labels: map[string]string{"sluice.dev/queue": "q"}, containers: []corev1.Container{{
				Name: "main", Image: "x", Resources: gpus(1),
				Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "0"}, {Name: "SLUICE_GPU_PORTION", Value: "1"}},
			}}},
			wantEnv: map[string][]string{"main": {"NVIDIA_VISIBLE_DEVICES=0", "SLUICE_GPU_PORTION=1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.pod.pod(tt.namespace)
			resp, out := admitPod(t, srv, in)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if tt.wantNoOp != (resp.Patch == nil) {
				t.Errorf("patch = %s, want a patch: %v", resp.Patch, !tt.wantNoOp)
			}
			if got := out.Labels["sluice.dev/queue"]; got != tt.wantQueue {
				t.Errorf("queue label = %q, want %q", got, tt.wantQueue)
			}
			for k, v := range in.Labels {
				if k != "sluice.dev/queue" && out.Labels[k] != v {
					t.Errorf("label %s = %q, want it kept as %q", k, out.Labels[k], v)
				}
			}
			all := append(append([]corev1.Container{}, out.Spec.InitContainers...), out.Spec.Containers...)
			for _, c := range all {
				want, ok := tt.wantEnv[c.Name]
				if !ok {
					continue
				}
				if got := envOf(c); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("container %s env = %q, want %q", c.Name, got, want)
				}
			}
		})
	}
}

func TestAdmitDeniesBadGPURequests(t *testing.T) {
	srv := newTestServer(t, nil)
	tests := []struct {
		name        string
		annotations map[string]string
		containers  []corev1.Container
		init        []corev1.Container
		want        []string // substrings of the denial message
	}{
		{name: "fraction of one", annotations: map[string]string{"gpu-fraction": "1"}, want: []string{`gpu-fraction="1"`, "(0,1)"}},
		{name: "fraction zero", annotations: map[string]string{"gpu-fraction": "0"}, want: []string{`gpu-fraction="0"`, "(0,1)"}},
		{name: "fraction above one", annotations: map[string]string{"gpu-fraction": "1.5"}, want: []string{`gpu-fraction="1.5"`, "(0,1)", "nvidia.com/gpu"}},
		{name: "negative fraction", annotations: map[string]string{"gpu-fraction": "-0.5"}, want: []string{`gpu-fraction="-0.5"`}},
		{name: "fraction not a number", annotations: map[string]string{"gpu-fraction": "half"}, want: []string{`gpu-fraction="half"`}},
		{name: "fraction NaN", annotations: map[string]string{"gpu-fraction": "NaN"}, want: []string{`gpu-fraction="NaN"`}},
		{name: "fraction empty", annotations: map[string]string{"gpu-fraction": ""}, want: []string{`gpu-fraction=""`}},
		{name: "fraction with spaces", annotations: map[string]string{"gpu-fraction": " 0.5"}, want: []string{`gpu-fraction=" 0.5"`}},
		{name: "memory zero", annotations: map[string]string{"gpu-memory": "0"}, want: []string{`gpu-memory="0"`, "positive whole number of MiB"}},
		{name: "memory with unit", annotations: map[string]string{"gpu-memory": "20Gi"}, want: []string{`gpu-memory="20Gi"`, "MiB"}},
		{name: "memory fractional", annotations: map[string]string{"gpu-memory": "1.5"}, want: []string{`gpu-memory="1.5"`}},
		{name: "devices without fraction", annotations: map[string]string{"gpu-fraction-num-devices": "2"},
			want: []string{"gpu-fraction-num-devices is only allowed together with gpu-fraction"}},
		{name: "devices zero", annotations: map[string]string{"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"},
			want: []string{`gpu-fraction-num-devices="0"`, "positive whole number of GPUs"}},
		{name: "fraction and memory", annotations: map[string]string{"gpu-fraction": "0.5", "gpu-memory": "1024"},
			want: []string{"gpu-fraction and gpu-memory both ask for a shared GPU"}},
		{name: "fraction with whole GPUs", annotations: map[string]string{"gpu-fraction": "0.5"},
			containers: []corev1.Container{{Name: "sidecar", Image: "x"}, {Name: "train", Image: "x", Resources: gpus(1)}},
			want:       []string{"gpu-fraction", `container "train" also requests nvidia.com/gpu`, "use one or the other"}},
		{name: "memory with whole GPUs in an init container", annotations: map[string]string{"gpu-memory": "1024"},
			init: []corev1.Container{{Name: "warmup", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
			want: []string{"gpu-memory", `container "warmup" also requests nvidia.com/gpu`}},
		{name: "every problem named at once", annotations: map[string]string{"gpu-fraction": "2", "gpu-memory": "x"},
			want: []string{`gpu-fraction="2"`, `gpu-memory="x"`, "both ask"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := admitPod(t, srv, podSpec{annotations: tt.annotations, containers: tt.containers, init: tt.init}.pod("plain"))
			if resp.Allowed || resp.Patch != nil {
				t.Fatalf("allowed (patch %s), want a denial", resp.Patch)
			}
			if resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
				t.Errorf("result = %+v, want code 422 reason Invalid", resp.Result)
			}
			for _, w := range tt.want {
				if !strings.Contains(resp.Result.Message, w) {
					t.Errorf("message %q does not contain %q", resp.Result.Message, w)
				}
			}
		})
	}
}

// A pod with Dynamic Resource Allocation claims is admitted as Sluice's: the scheduler
// allocates its claims (k8sscheduler/scheduler/dra*.go).
func TestAdmitTakesResourceClaims(t *testing.T) {
	srv := newTestServer(t, nil)
	pod := podSpec{}.pod("plain")
	tmpl := "one-gpu"
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}, {Name: "nic", ResourceClaimTemplateName: &tmpl}}
	if resp, _ := admitPod(t, srv, pod); !resp.Allowed {
		t.Fatalf("a pod with resource claims was refused: %+v", resp.Result)
	}
}

func TestAdmitLeavesOtherPodsAlone(t *testing.T) {
	srv := newTestServer(t, nil)
	bad := map[string]string{"gpu-fraction": "7"}
	tests := []struct {
		name string
		pod  *corev1.Pod
		op   admissionv1.Operation
	}{
		{name: "default scheduler, bad fraction", pod: podSpec{scheduler: "default-scheduler", annotations: bad}.pod("plain"), op: admissionv1.Create},
		{name: "sluice pod update", pod: podSpec{annotations: bad}.pod("plain"), op: admissionv1.Update},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, review, body := post(t, srv, reviewFor(t, tt.pod, tt.op))
			if review == nil || review.Response == nil || !review.Response.Allowed || review.Response.Patch != nil {
				t.Fatalf("want allowed without a patch, got %s", body)
			}
		})
	}
}

func TestAdmitNamespaceReadFailureRefuses(t *testing.T) {
	srv := newTestServer(t, func(context.Context, string) (*corev1.Namespace, error) {
		return nil, apierrors.NewTimeoutError("etcd is slow", 1)
	})
	resp, _ := admitPod(t, srv, podSpec{}.pod("plain"))
	if resp.Allowed || resp.Result.Code != http.StatusServiceUnavailable ||
		!strings.Contains(resp.Result.Message, `cannot read namespace "plain"`) {
		t.Fatalf("want a 503 denial naming the namespace, got allowed=%v %+v", resp.Allowed, resp.Result)
	}
}

// A pod's PodGroup is named at admission, marked as derived, so the pod grouper only has
// to create it; pods it cannot name yet are left to the grouper.
func TestAdmitNamesThePodGroup(t *testing.T) {
	srv := newTestServer(t, nil)
	named := func(name string, owners []metav1.OwnerReference, ann map[string]string) *corev1.Pod {
		p := podSpec{annotations: ann}.pod("nlp-team")
		p.GenerateName, p.Name, p.OwnerReferences = "", name, owners
		return p
	}
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "0f1e2d3c-aaaa", Controller: new(true)}}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantGroup string
		derived   bool
	}{
		// A bare pod's group is named by its job id (owned_test.go); without an id source
		// nothing unique names it yet, so the grouper names it by the pod's UID.
		{"bare pod, no job id: the grouper names it", named("eval-7", nil, nil), "", false},
		{"bare pod with other annotations, no job id", named("eval-8", nil, map[string]string{"team": "x"}), "", false},
		{"generateName only: the grouper names it later", podSpec{}.pod("nlp-team"), "", false},
		{"owned pod, no owner reader: the grouper names it", named("train-abc", job, nil), "", false},
		{"the user's group stays", named("eval-9", nil, map[string]string{"sluice.dev/pod-group": "my-gang"}), "my-gang", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := admitPod(t, srv, tt.pod)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if g := got.Annotations["sluice.dev/pod-group"]; g != tt.wantGroup {
				t.Errorf("PodGroup annotation %q, want %q", g, tt.wantGroup)
			}
			if d := got.Annotations["sluice.dev/pod-group-derived"] == "true"; d != tt.derived {
				t.Errorf("derived mark %v, want %v", d, tt.derived)
			}
			if tt.pod.Annotations["team"] != "" && got.Annotations["team"] != tt.pod.Annotations["team"] {
				t.Errorf("the pod's own annotations were lost: %v", got.Annotations)
			}
		})
	}
}
