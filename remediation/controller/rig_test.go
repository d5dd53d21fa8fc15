package controller_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// env is one test's remediation stack on the shared rig: the controller and one agent per
// node, each agent reading its node's fault-injection file. Both stop when the test ends.
type env struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
	faults map[string]string // node -> fault file
	mu     sync.Mutex
	downs  []controller.Downtime
}

// RecordDown keeps the intervals as accounting would.
func (e *env) RecordDown(_ context.Context, d controller.Downtime) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.downs = append(e.downs, d)
	return nil
}

func startEnv(t *testing.T, nodes ...string) *env {
	return startEnvWith(t, func(*controller.Config) {}, nodes...)
}

// startEnvWith starts the stack with the test's changes to the controller's Config.
func startEnvWith(t *testing.T, tune func(*controller.Config), nodes ...string) *env {
	rig := e2e.Rig(t)
	e := &env{t: t, client: rig.Client(), ns: e2e.Namespace(t, rig), faults: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	cfg := controller.Config{
		RetryInterval: 100 * time.Millisecond,
		DrainTimeout:  3 * time.Second,
		Validation: controller.Validation{
			Namespace: e.ns,
			// The rig's kwok stage ends pods carrying these after the duration.
			Annotations: map[string]string{"sluice.dev/sim-duration": "1s", "sluice.dev/sim-exit-code": "0"},
		},
		Downtime: e,
	}
	tune(&cfg)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := controller.Run(ctx, cfg, rig.RESTConfig()); err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	// Simulated nodes have no GPUs to load NVML for; the agent reads their inventory from
	// the annotation the rig wrote and reports injected faults only.
	noDriver := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	dir := t.TempDir()
	for _, n := range nodes {
		e.faults[n] = filepath.Join(dir, n+".json")
		acfg := agent.Config{NodeName: n, RESTConfig: rig.RESTConfig(), NVML: noDriver, FaultFile: e.faults[n],
			SysfsRoot: filepath.Join(dir, "no-infiniband"), PollInterval: time.Second, FaultFilePoll: 20 * time.Millisecond}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := agent.Run(ctx, acfg); err != nil {
				t.Errorf("agent %s: %v", n, err)
			}
		}()
	}
	for _, n := range nodes {
		e.waitNode(n, "agent reports healthy", time.Minute, func(node *corev1.Node) bool {
			c := condition(node, health.GPUXidError)
			return c != nil && c.Status == corev1.ConditionFalse
		})
	}
	return e
}

func condition(node *corev1.Node, t health.ConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if string(node.Status.Conditions[i].Type) == string(t) {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func tainted(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == health.QuarantineTaint && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// inject sets the faults node's agent reports; nil heals the node.
func (e *env) inject(node string, faults *agent.Faults) {
	e.t.Helper()
	if err := agent.WriteFaults(e.faults[node], faults); err != nil {
		e.t.Fatal(err)
	}
}

// waitNode polls the node every 10 ms (fine enough to time quarantine) until ok.
func (e *env) waitNode(name, what string, timeout time.Duration, ok func(*corev1.Node) bool) time.Time {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		node, err := e.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(node) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("node %s: %s: not after %s (err %v)", name, what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runPod starts a pod bound to node, on the given GPU when gpu >= 0, and waits until it runs.
func (e *env) runPod(name, node string, gpu int) *corev1.Pod {
	e.t.Helper()
	return e.runPodWith(name, node, gpu, func(*corev1.Pod) {})
}

// runPodWith runs a pod changed by the test before it is created.
func (e *env) runPodWith(name, node string, gpu int, change func(*corev1.Pod)) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{"app": name}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "work", Image: "train:latest"}},
			TerminationGracePeriodSeconds: new(int64)},
	}
	if gpu >= 0 {
		a := v1alpha1.GPUAssignment{GPUs: []v1alpha1.AssignedGPU{{Index: int32(gpu), UUID: cluster.GPUUUID(node, gpu)}}, Portion: 1}
		pod.Annotations[v1alpha1.GPUAssignmentAnnotation] = a.Encode()
	}
	change(pod)
	created, err := e.client.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
	e2e.WaitFor(e.t, "pod "+name+" running", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	return created
}

// waitGone waits until none of the pods exists and returns when that was seen.
func (e *env) waitGone(timeout time.Duration, names ...string) time.Time {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := 0
		for _, n := range names {
			_, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), n, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				left++
			}
		}
		if left == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d of pods %v still there after %s", left, names, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) exists(name string) bool {
	p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil && p.DeletionTimestamp == nil
}

// hasEvent waits up to 5s for an Event on the node: events are written asynchronously.
func (e *env) hasEvent(node, reason string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		list, err := e.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: fmt.Sprintf("involvedObject.name=%s,reason=%s", node, reason)})
		if err == nil && len(list.Items) > 0 {
			return true
		}
	}
	return false
}

func remediation(node *corev1.Node) health.RemediationState {
	s, _ := health.ParseRemediation(node.Annotations)
	return s
}
