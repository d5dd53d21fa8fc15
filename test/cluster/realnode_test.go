package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRealNodesRunPods starts a rig with two real nodes and runs a pod on each: the
// kubelet starts the containers from the rig's images, the device plugin's GPU reaches
// the container through the kubelet's device manager, a pod's name behind a headless
// Service resolves through the cluster DNS to its IP on the other node, and the
// container's output is its log through the API server. Stop leaves nothing behind.
func TestRealNodesRunPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a rig with real nodes")
	}
	spec := Spec{NodePools: []NodePool{{Name: "real", Count: 2, GPUsPerNode: 1, GPUModel: "Rig-GPU", GPUMemoryMiB: 1024, Real: true}}}
	c, err := Start(context.Background(), Options{Spec: spec, Dir: t.TempDir(), Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Stop()
		if err := c.Leftovers(); err != nil {
			t.Errorf("leftovers: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := c.Client()
	ns := "default"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "peers"}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "peers"}, PublishNotReadyAddresses: true}}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, node, script string, gpu bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "peers"}},
			Spec: corev1.PodSpec{NodeName: node, Hostname: name, Subdomain: "peers", RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: JobImage, Command: []string{"/bin/bash", "-c", script}}}}}
		if gpu {
			one := resource.MustParse("1")
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: one}}
		}
		return p
	}
	server := pod("a", "real-0", "echo serving; sleep 120", false)
	// b may start before a has an address, or before the EndpointSlice and CoreDNS have
	// caught up with it: it asks again for a while, as a job's peers wait for their
	// rendezvous. What is checked is that the name resolves to a, not how soon.
	client2 := pod("b", "real-1", "echo gpu=$NVIDIA_VISIBLE_DEVICES; for i in $(seq 60); do ip=$(getent hosts a.peers | cut -d' ' -f1); "+
		"[ -n \"$ip\" ] && break; sleep 0.5; done; echo resolved=$ip", true)
	for _, p := range []*corev1.Pod{server, client2} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var a *corev1.Pod
	waitPod(t, ctx, c, "a", func(p *corev1.Pod) bool { a = p; return p.Status.Phase == corev1.PodRunning })
	var b *corev1.Pod
	waitPod(t, ctx, c, "b", func(p *corev1.Pod) bool {
		b = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs, err := client.CoreV1().Pods(ns).GetLogs("b", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of b: %v", err)
	}
	out := string(logs)
	t.Logf("pod b (%s) printed:\n%s", b.Status.Phase, out)
	if want := "gpu=" + GPUUUID("real-1", 0); !strings.Contains(out, want) {
		t.Errorf("the device plugin's GPU did not reach the container: want %q", want)
	}
	if want := "resolved=" + a.Status.PodIP; a.Status.PodIP == "" || !strings.Contains(out, want) {
		t.Errorf("a.peers did not resolve to pod a's IP %s", a.Status.PodIP)
	}
}

func waitPod(t *testing.T, ctx context.Context, c *Cluster, name string, done func(*corev1.Pod) bool) {
	t.Helper()
	for {
		p, err := c.Client().CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && done(p) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s: %v (last: %+v)", name, ctx.Err(), statusOf(p))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func statusOf(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%s %v", p.Status.Phase, p.Status.ContainerStatuses)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
