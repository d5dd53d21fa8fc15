package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// TestDRAKubeletPluginPreparesClaims: preparing a claim writes a CDI spec whose devices set
// NVIDIA_VISIBLE_DEVICES to the UUIDs of their request's GPUs and answers with their CDI
// IDs; preparing again is the same; a device another prepared claim holds is refused, as
// is a device that is no whole GPU; unpreparing removes the spec, and again is no error.
func TestDRAKubeletPluginPreparesClaims(t *testing.T) {
	pool := NodePool{Name: "real", Count: 1, GPUsPerNode: 3, GPUModel: "Rig-GPU", GPUMemoryMiB: 1024, Real: true, DRA: true}
	n := &realNode{name: "real-0", pool: pool, dir: t.TempDir()}
	p := newDRAKubeletPlugin(n, testWriter{t})
	if err := os.MkdirAll(p.cdiDir, 0o755); err != nil {
		t.Fatal(err)
	}
	claim := func(uid string, results ...resourcev1.DeviceRequestAllocationResult) *resourcev1.ResourceClaim {
		return &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c-" + uid, Namespace: "default", UID: types.UID(uid)},
			Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{
				Devices: resourcev1.DeviceAllocationResult{Results: results}}},
		}
	}
	result := func(request, device string) resourcev1.DeviceRequestAllocationResult {
		return resourcev1.DeviceRequestAllocationResult{Request: request, Driver: DRADriver, Pool: "real-0", Device: device}
	}
	ctx := context.Background()
	two := claim("uid-two", result("gpus", "gpu-0"), result("gpus", "gpu-2"), result("other", "gpu-1"))
	for range 2 {
		got, err := p.PrepareResourceClaims(ctx, []*resourcev1.ResourceClaim{two})
		if err != nil || got[two.UID].Err != nil {
			t.Fatalf("prepare: %v, %v", err, got[two.UID].Err)
		}
		var ids []string
		for _, d := range got[two.UID].Devices {
			if d.PoolName != "real-0" || len(d.Requests) != 1 {
				t.Errorf("device %+v", d)
			}
			ids = append(ids, d.CDIDeviceIDs...)
		}
		want := []string{"k8s.gpu.nvidia.com/claim=uid-two-gpu-0", "k8s.gpu.nvidia.com/claim=uid-two-gpu-2", "k8s.gpu.nvidia.com/claim=uid-two-gpu-1"}
		if !slices.Equal(ids, want) {
			t.Errorf("CDI device IDs %v, want %v", ids, want)
		}
	}
	data, err := os.ReadFile(p.cdiSpecPath(two.UID))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if err := cdispec.ValidateVersion(&spec); err != nil || spec.Kind != cdiKind {
		t.Errorf("spec version %s kind %s: %v", spec.Version, spec.Kind, err)
	}
	env := map[string][]string{}
	for _, d := range spec.Devices {
		env[d.Name] = d.ContainerEdits.Env
	}
	both := visibleDevicesEnv + "=" + GPUUUID("real-0", 0) + "," + GPUUUID("real-0", 2)
	wantEnv := map[string][]string{
		"uid-two-gpu-0": {both}, "uid-two-gpu-2": {both},
		"uid-two-gpu-1": {visibleDevicesEnv + "=" + GPUUUID("real-0", 1)},
	}
	for name, want := range wantEnv {
		if !slices.Equal(env[name], want) {
			t.Errorf("CDI device %s sets %v, want %v", name, env[name], want)
		}
	}
	if len(env) != len(wantEnv) {
		t.Errorf("CDI devices %v", env)
	}

	taken := claim("uid-taken", result("gpus", "gpu-2"))
	mig := claim("uid-mig", result("gpus", "gpu-0-mig-1g-0"))
	got, err := p.PrepareResourceClaims(ctx, []*resourcev1.ResourceClaim{taken, mig})
	if err != nil {
		t.Fatal(err)
	}
	if e := got[taken.UID].Err; e == nil || !strings.Contains(e.Error(), "prepared for claim uid-two") {
		t.Errorf("a device held by another claim: %v", e)
	}
	if e := got[mig.UID].Err; e == nil || !strings.Contains(e.Error(), "whole GPUs only") {
		t.Errorf("a MIG device: %v", e)
	}
	if _, err := os.Stat(p.cdiSpecPath(taken.UID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused claim has a spec: %v", err)
	}

	for range 2 {
		obj := kubeletplugin.NamespacedObject{UID: two.UID, NamespacedName: types.NamespacedName{Namespace: "default", Name: two.Name}}
		out, err := p.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{obj})
		if err != nil || out[two.UID] != nil {
			t.Fatalf("unprepare: %v, %v", err, out[two.UID])
		}
	}
	if _, err := os.Stat(p.cdiSpecPath(two.UID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec left after unprepare: %v", err)
	}
	if left := p.preparedClaims(); len(left) != 0 {
		t.Errorf("still prepared: %v", left)
	}
	if got, _ := p.PrepareResourceClaims(ctx, []*resourcev1.ResourceClaim{taken}); got[taken.UID].Err != nil {
		t.Errorf("gpu-2, free again: %v", got[taken.UID].Err)
	}
}

func TestRuntimeHasCDI(t *testing.T) {
	for v, want := range map[string]bool{
		"containerd://1.6.20~ds1": false, "containerd://1.7.24": true, "containerd://2.4.2+unknown": true,
		"containerd://v2.1.0": true, "cri-o://1.30.0": false, "": false,
	} {
		n := &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: v}}}
		if got := RuntimeHasCDI(n); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

// TestRealDRANodeRunsAClaimPod starts a rig with a real DRA node: its DRA kubelet plugin
// registers with the kubelet and publishes the node's GPUs, the devices a kwok DRA node's
// slices list, and the device plugin serves none. kube-scheduler allocates a pod's claim
// for one GPU there; the kubelet has the plugin prepare it (a CDI spec while the pod runs)
// and, with a runtime that applies CDI, the container sees NVIDIA_VISIBLE_DEVICES as the
// allocated GPU's UUID; once the pod ends, the kubelet has the claim unprepared.
func TestRealDRANodeRunsAClaimPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a rig with real nodes")
	}
	began := time.Now()
	pool := NodePool{Name: "realdra", Count: 1, GPUsPerNode: 2, GPUModel: "Rig-GPU", GPUMemoryMiB: 1024, Real: true, DRA: true}
	c, err := Start(context.Background(), Options{Spec: Spec{NodePools: []NodePool{pool}}, Dir: t.TempDir(), Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Stop()
		if err := c.Leftovers(); err != nil {
			t.Errorf("leftovers: %v", err)
		}
	}()
	t.Logf("rig up in %s", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := c.Client()
	n := c.realNodes[0]

	node, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := node.Status.Capacity[ResourceGPU]; ok && !q.IsZero() {
		t.Errorf("%s has %s %s from the device plugin; a DRA node's GPUs are the DRA plugin's", n.name, q.String(), ResourceGPU)
	}
	if a := node.Annotations[AnnotationGPUs]; a != "" {
		t.Errorf("%s carries %s %s; a DRA node has none", n.name, AnnotationGPUs, a)
	}
	slicesList, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorNodeName + "=" + n.name})
	if err != nil {
		t.Fatal(err)
	}
	var published, want []resourcev1.Device
	for _, s := range slicesList.Items {
		published = append(published, s.Spec.Devices...)
	}
	for _, s := range pool.resourceSlices(0) {
		want = append(want, s.Spec.Devices...)
	}
	if len(published) != len(want) {
		t.Fatalf("published %d devices, want the %d dra.go builds", len(published), len(want))
	}
	for i := range want {
		gotJSON, _ := json.Marshal(published[i])
		wantJSON, _ := json.Marshal(want[i])
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("device %d published\n%s\nwant\n%s", i, gotJSON, wantJSON)
		}
	}

	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}},
		}}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "claimer"},
		Spec: corev1.PodSpec{
			SchedulerName:  corev1.DefaultSchedulerName,
			RestartPolicy:  corev1.RestartPolicyNever,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(tmpl.Name)}},
			Containers: []corev1.Container{{Name: "main", Image: JobImage,
				// Running long enough for the test to see the claim prepared.
				Command:   []string{"/bin/bash", "-c", "echo visible=$NVIDIA_VISIBLE_DEVICES; sleep 3"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var claim *resourcev1.ResourceClaim
	var spec []byte
	waitPod(t, ctx, c, pod.Name, func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			return false
		}
		if claim == nil {
			for _, s := range p.Status.ResourceClaimStatuses {
				if s.ResourceClaimName != nil {
					claim, _ = client.ResourceV1().ResourceClaims("default").Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
				}
			}
		}
		if claim != nil && spec == nil {
			spec, _ = os.ReadFile(n.dra.cdiSpecPath(claim.UID))
		}
		return p.Status.Phase == corev1.PodSucceeded
	})
	if claim == nil || claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("the pod's claim: %+v", claim)
	}
	r := claim.Status.Allocation.Devices.Results[0]
	uuid := n.dra.uuids[r.Device]
	if r.Driver != DRADriver || r.Pool != n.name || uuid == "" {
		t.Fatalf("allocated %s/%s/%s", r.Driver, r.Pool, r.Device)
	}
	if !strings.Contains(string(spec), visibleDevicesEnv+"="+uuid) {
		t.Errorf("while the pod ran, its claim's CDI spec was %q; want one setting %s=%s", spec, visibleDevicesEnv, uuid)
	}
	logs, err := client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod %s on %s, claim %s got %s (%s), printed %q", pod.Name, n.name, claim.Name, r.Device, uuid, logs)

	// The pod has ended: the kubelet has the claim unprepared.
	for !errors.Is(statErr(n.dra.cdiSpecPath(claim.UID)), os.ErrNotExist) || len(n.dra.preparedClaims()) > 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("claim %s still prepared after its pod ended: %v", claim.Name, n.dra.preparedClaims())
		case <-time.After(250 * time.Millisecond):
		}
	}
	if !RuntimeHasCDI(node) {
		t.Skipf("%s's runtime %s applies no CDI: the container's %s is unchecked (it printed %q)",
			n.name, node.Status.NodeInfo.ContainerRuntimeVersion, visibleDevicesEnv, strings.TrimSpace(string(logs)))
	}
	if want := "visible=" + uuid + "\n"; string(logs) != want {
		t.Errorf("the container printed %q, want %q", logs, want)
	}
}

func statErr(path string) error {
	_, err := os.Stat(path)
	return err
}
