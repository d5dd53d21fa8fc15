package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

var installCRDs sync.Once

// env is one end-to-end test's rig, namespace, CRD client and running scheduler.
type env struct {
	t   *testing.T
	rig *cluster.Cluster
	ns  string
	crs client.Client
}

// setup installs the CRDs (once) and makes a namespace for the test.
func setup(t *testing.T) *env {
	t.Helper()
	rig := e2e.Rig(t)
	var err error
	installCRDs.Do(func() { err = crds.Install(context.Background(), rig.RESTConfig()) })
	if err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crs, err := client.New(rig.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, rig: rig, ns: e2e.Namespace(t, rig), crs: crs}
}

// start is setup plus a running scheduler.
func start(t *testing.T) *env {
	e := setup(t)
	e.run()
	return e
}

// run starts a scheduler for the test, stopped (and waited for) when the test ends. Tests
// that change partitions or nodes do so before, so the scheduler's first view has them.
func (e *env) run() { e.runWith(nil) }

// runWith is run with a PodFactory for pod-less (Slurm) PodGroups; it returns the running
// scheduler.
func (e *env) runWith(factory PodFactory) *Scheduler {
	e.t.Helper()
	s, err := New(Config{Period: 200 * time.Millisecond, PendingStatusDelay: 300 * time.Millisecond, QueueStatusPeriod: 500 * time.Millisecond},
		e.rig.RESTConfig(), nil, factory)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("scheduler Run: %v", err)
		}
	})
	return s
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.crs.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	e.t.Cleanup(func() { _ = e.crs.Delete(context.Background(), obj) })
}

// queue creates a leaf queue, open to every namespace, with a GPU quota (0: none) in
// partition part.
func (e *env) queue(name, part string, gpus int64) {
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{}}}
	if gpus > 0 {
		q.Spec.Quotas = []v1alpha1.PartitionQuota{{Partition: part, GPU: &v1alpha1.ResourceQuota{
			Quota: resource.NewQuantity(gpus, resource.DecimalSI)}}}
	}
	e.create(q)
}

func (e *env) partition(name string, placement v1alpha1.PlacementStrategy) {
	e.create(&v1alpha1.Partition{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: name}, Placement: placement}})
}

// group creates a PodGroup and n pods in it, each asking for gpus whole GPUs (or the
// annotations' share), and returns the pod names.
func (e *env) group(name, queue, part string, minMember int32, preempt v1alpha1.Preemptibility, n int, gpus int64, ann map[string]string) []string {
	e.t.Helper()
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.PodGroupSpec{MinMember: minMember, Queue: queue, Partition: part, Preemptibility: preempt}})
	var names []string
	for i := range n {
		a := map[string]string{v1alpha1.PodGroupAnnotation: name}
		for k, v := range ann {
			a[k] = v
		}
		req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		if gpus > 0 {
			req[v1alpha1.GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: e.ns, Annotations: a},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, Containers: []corev1.Container{{
				Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req, Limits: gpuLimit(gpus)}}}}}
		if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create pod: %v", err)
		}
		names = append(names, pod.Name)
	}
	return names
}

func gpuLimit(gpus int64) corev1.ResourceList {
	if gpus == 0 {
		return nil
	}
	return corev1.ResourceList{v1alpha1.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
}

func (e *env) pod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// waitBound waits until every named pod is bound and returns their nodes.
func (e *env) waitBound(names []string, timeout time.Duration) []string {
	e.t.Helper()
	nodes := make([]string, len(names))
	e2e.WaitFor(e.t, fmt.Sprintf("pods %v bound", names), timeout, func(ctx context.Context) (bool, error) {
		for i, n := range names {
			p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName == "" {
				return false, fmt.Errorf("%s not bound yet", n)
			}
			nodes[i] = p.Spec.NodeName
		}
		return true, nil
	})
	return nodes
}

// condition waits for the PodGroup's condition of type typ with the given status.
func (e *env) condition(group, typ string, status metav1.ConditionStatus, timeout time.Duration) metav1.Condition {
	e.t.Helper()
	var got metav1.Condition
	e2e.WaitFor(e.t, fmt.Sprintf("PodGroup %s condition %s=%s", group, typ, status), timeout, func(ctx context.Context) (bool, error) {
		pg := &v1alpha1.PodGroup{}
		if err := e.crs.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: group}, pg); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, typ)
		if c == nil || c.Status != status {
			return false, fmt.Errorf("conditions %+v", pg.Status.Conditions)
		}
		got = *c
		return true, nil
	})
	return got
}

// cycles is how many scheduling cycles s has run.
func cycles(s *Scheduler) uint64 {
	var m dto.Metric
	if err := s.metrics.cycle.Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}
