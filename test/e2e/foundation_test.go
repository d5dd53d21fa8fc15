package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/test/cluster"
)

// jobTimeout bounds a short simulated job from creation to its final state on
// a loaded 2-core machine.
const jobTimeout = 2 * time.Minute

func TestNodesReadyWithGPUs(t *testing.T) {
	c := Rig(t)
	nodes, err := c.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Node{}
	for _, n := range nodes.Items {
		byName[n.Name] = n
	}
	for _, pool := range c.Spec().NodePools {
		for i := range pool.Count {
			name := cluster.NodeName(pool.Name, i)
			t.Run(name, func(t *testing.T) {
				n, ok := byName[name]
				if !ok {
					t.Fatalf("node %s not in the cluster", name)
				}
				checkNode(t, n, pool)
			})
		}
	}
	if want := c.Spec().NodeCount(); len(nodes.Items) != want {
		t.Errorf("%d nodes in the cluster, want %d", len(nodes.Items), want)
	}
}

func checkNode(t *testing.T, n corev1.Node, pool cluster.NodePool) {
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		t.Errorf("not Ready: %+v", n.Status.Conditions)
	}
	for _, taint := range n.Spec.Taints {
		t.Errorf("unexpected taint %s", taint.ToString())
	}
	if got := n.Status.Allocatable[cluster.ResourceGPU]; got.Value() != int64(pool.GPUsPerNode) {
		t.Errorf("allocatable %s = %s, want %d", cluster.ResourceGPU, got.String(), pool.GPUsPerNode)
	}
	if got, want := n.Status.Allocatable[corev1.ResourceCPU], resource.MustParse(pool.CPU); got.Cmp(want) != 0 {
		t.Errorf("allocatable cpu = %s, want %s", got.String(), want.String())
	}
	for label, want := range map[string]string{
		cluster.LabelGPUProduct:  pool.GPUModel,
		cluster.LabelGPUMemory:   strconv.Itoa(pool.GPUMemoryMiB),
		cluster.LabelGPUCount:    strconv.Itoa(pool.GPUsPerNode),
		cluster.LabelMIGStrategy: "none",
		cluster.LabelPartition:   pool.Name,
	} {
		if got := n.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}
	var gpus []cluster.GPUInfo
	if err := json.Unmarshal([]byte(n.Annotations[cluster.AnnotationGPUs]), &gpus); err != nil {
		t.Fatalf("annotation %s: %v", cluster.AnnotationGPUs, err)
	}
	if len(gpus) != pool.GPUsPerNode {
		t.Fatalf("annotation lists %d GPUs, want %d", len(gpus), pool.GPUsPerNode)
	}
	for i, g := range gpus {
		if int(g.Index) != i || g.UUID != cluster.GPUUUID(n.Name, i) || g.Model != pool.GPUModel || g.MemoryMiB != int64(pool.GPUMemoryMiB) || !g.Healthy {
			t.Errorf("gpu %d = %+v", i, g)
		}
	}
}

// A Job's pod is bound by the default scheduler to a GPU node, runs on kwok for
// the simulated duration and ends with the simulated exit code, which the Job
// controller turns into Complete or Failed.
func TestJobRunsToCompletion(t *testing.T) {
	c := Rig(t)
	tests := []struct {
		name      string
		exitCode  int
		wantPhase corev1.PodPhase
		wantJob   batchv1.JobConditionType
		wantMsg   string
	}{
		{name: "succeeds", exitCode: 0, wantPhase: corev1.PodSucceeded, wantJob: batchv1.JobComplete, wantMsg: "Completed"},
		{name: "fails with exit code", exitCode: 3, wantPhase: corev1.PodFailed, wantJob: batchv1.JobFailed, wantMsg: "Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := Namespace(t, c)
			jobs := c.Client().BatchV1().Jobs(ns)
			job, err := jobs.Create(context.Background(), gpuJob("train", 2*time.Second, tt.exitCode), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			WaitFor(t, fmt.Sprintf("job %s/%s %s", ns, job.Name, tt.wantJob), jobTimeout, func(ctx context.Context) (bool, error) {
				j, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, cond := range j.Status.Conditions {
					if cond.Status == corev1.ConditionTrue && (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) {
						if cond.Type != tt.wantJob {
							t.Fatalf("job ended %s (%s), want %s", cond.Type, cond.Message, tt.wantJob)
						}
						return true, nil
					}
				}
				return false, fmt.Errorf("status %+v", j.Status)
			})

			pods, err := c.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 1 {
				t.Fatalf("%d pods for the job, want 1", len(pods.Items))
			}
			checkFinishedPod(t, c, pods.Items[0], tt.wantPhase, tt.exitCode, tt.wantMsg)
		})
	}
}

func checkFinishedPod(t *testing.T, c *cluster.Cluster, pod corev1.Pod, phase corev1.PodPhase, exitCode int, reason string) {
	t.Helper()
	if pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("pod scheduler %q, want %q", pod.Spec.SchedulerName, corev1.DefaultSchedulerName)
	}
	scheduled := false
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			scheduled = true
		}
	}
	if !scheduled || pod.Spec.NodeName == "" {
		t.Errorf("pod not bound by the scheduler: node %q, conditions %+v", pod.Spec.NodeName, pod.Status.Conditions)
	}
	node, err := c.Client().CoreV1().Nodes().Get(context.Background(), pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bound node: %v", err)
	}
	if gpus := node.Status.Allocatable[cluster.ResourceGPU]; gpus.Value() == 0 {
		t.Errorf("pod asking for a GPU bound to %s, which has none", node.Name)
	}
	if pod.Status.Phase != phase {
		t.Errorf("pod phase %s, want %s", pod.Status.Phase, phase)
	}
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses %+v, want one", pod.Status.ContainerStatuses)
	}
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term == nil {
		t.Fatalf("container not terminated: %+v", pod.Status.ContainerStatuses[0].State)
	}
	if int(term.ExitCode) != exitCode || term.Reason != reason {
		t.Errorf("container terminated with %d (%s), want %d (%s)", term.ExitCode, term.Reason, exitCode, reason)
	}
	if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran < time.Second {
		t.Errorf("container ran %s, want about the simulated 2s", ran)
	}
}

// gpuJob is a one-pod Job asking for one GPU that kwok runs for d and ends with
// exitCode.
func gpuJob(name string, d time.Duration, exitCode int) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: cluster.SimulatedRun(d, exitCode)},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "registry.example/train:latest",
						Resources: corev1.ResourceRequirements{
							Limits: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("1")},
						},
					}},
				},
			},
		},
	}
}

// Two rigs run side by side (own ports, own state), and Stop, even called
// twice at once, leaves no process and no port behind.
func TestSecondRigSideBySideStopsClean(t *testing.T) {
	first := Rig(t)
	spec := cluster.Spec{NodePools: []cluster.NodePool{{Name: "l4", Count: 1, GPUsPerNode: 1, GPUModel: "L4", GPUMemoryMiB: 23034, CPU: "16", Memory: "64Gi"}}}
	second, err := cluster.Start(context.Background(), cluster.Options{Spec: spec, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			second.Stop()
		}
	})
	if second.URL == first.URL {
		t.Fatalf("both rigs at %s", first.URL)
	}
	node, err := second.Client().CoreV1().Nodes().Get(context.Background(), "l4-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNode(t, *node, spec.NodePools[0])
	if _, err := first.Client().CoreV1().Nodes().Get(context.Background(), "l4-0", metav1.GetOptions{}); err == nil {
		t.Error("the second rig's node shows up in the first rig")
	}

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(second.Stop)
	}
	wg.Wait()
	stopped = true
	if err := second.Leftovers(); err != nil {
		t.Errorf("after Stop: %v", err)
	}
	if _, err := first.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("stopping the second rig broke the first: %v", err)
	}
}

// testLog sends rig progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", p)
	return len(p), nil
}

// A pod without sim-duration runs until deleted: a Job with a deadline fails
// with DeadlineExceeded, and its pod is stopped and removed as a kubelet would.
func TestJobWithoutDurationTimesOut(t *testing.T) {
	c := Rig(t)
	ns := Namespace(t, c)
	job := gpuJob("forever", 0, 0)
	job.Spec.Template.Annotations = nil // no sim-duration: runs until deleted
	job.Spec.ActiveDeadlineSeconds = new(int64(3))
	jobs := c.Client().BatchV1().Jobs(ns)
	if _, err := jobs.Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "job "+ns+"/forever DeadlineExceeded", jobTimeout, func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, "forever", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				if cond.Reason != batchv1.JobReasonDeadlineExceeded {
					t.Fatalf("job failed with %s (%s), want DeadlineExceeded", cond.Reason, cond.Message)
				}
				return true, nil
			}
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				t.Fatal("job without sim-duration completed")
			}
		}
		return false, fmt.Errorf("status %+v", j.Status)
	})
	WaitFor(t, "the timed-out job's pod removed", jobTimeout, func(ctx context.Context) (bool, error) {
		pods, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=forever"})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods left", len(pods.Items))
	})
}
