package remediation

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/controller"
	slurmclient "github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// submit sends an sbatch script as alice and returns the job id.
func (s *site) submit(script string) uint32 {
	s.t.Helper()
	id, _, err := s.rest.Submit(context.Background(), map[string]any{"script": script, "environment": []string{"PATH=/bin:/usr/bin"}})
	if err != nil {
		s.t.Fatalf("submit: %v", err)
	}
	return id
}

// waitState waits until the REST API shows the job in state.
func (s *site) waitState(id uint32, state string, timeout time.Duration) slurmclient.Job {
	s.t.Helper()
	var last slurmclient.Job
	e2e.WaitFor(s.t, fmt.Sprintf("job %d %s", id, state), timeout, func(ctx context.Context) (bool, error) {
		j, err := s.rest.Job(ctx, id)
		if err != nil {
			return false, err
		}
		last = j
		return j.State() == state, fmt.Errorf("state %v reason %s", j.JobState, j.StateReason)
	})
	return last
}

// jobPods lists the pods of job id that exist and are not being deleted.
func (s *site) jobPods(ctx context.Context, id uint32) []corev1.Pod {
	s.t.Helper()
	list, err := s.kube.CoreV1().Pods(kube.Namespace("nlp")).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", v1alpha1.JobIDLabel, id)})
	if err != nil {
		s.t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// waitDrained polls every 10 ms until no pod a drain must remove is left on node (the
// controller's validation pods stay; pods still terminating count), and returns when
// that was seen.
func (s *site) waitDrained(node string, timeout time.Duration) time.Time {
	s.t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		list, err := s.kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			s.t.Fatal(err)
		}
		var left []string
		for _, p := range list.Items {
			if _, validation := p.Labels[controller.ValidationLabel]; !validation && p.Status.Phase != corev1.PodSucceeded {
				left = append(left, p.Namespace+"/"+p.Name)
			}
		}
		if len(left) == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("node %s not drained after %s: %v left", node, timeout, left)
		}
	}
}

// groupPhase is one status the Slurm lifecycle or the scheduler wrote on a job's PodGroup.
type groupPhase struct {
	phase    v1alpha1.PodGroupPhase
	requeues int32
}

// phaseLog records every phase a job's PodGroup goes through. A watch sees each write,
// so a PENDING spell too short to poll for (the scheduler places a requeued job within a
// cycle) is still recorded.
type phaseLog struct {
	mu   sync.Mutex
	seen []groupPhase
}

func (l *phaseLog) phases() []groupPhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

func (s *site) watchPhases(id uint32) *phaseLog {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.crs.Watch(ctx, &v1alpha1.PodGroupList{}, client.InNamespace(kube.Namespace("nlp")),
		client.MatchingLabels{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(id), 10)})
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	l := &phaseLog{}
	done := make(chan struct{})
	s.t.Cleanup(func() { cancel(); w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pg, ok := ev.Object.(*v1alpha1.PodGroup)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			p := groupPhase{pg.Status.Phase, pg.Status.Requeues}
			l.mu.Lock()
			if len(l.seen) == 0 || l.seen[len(l.seen)-1] != p {
				l.seen = append(l.seen, p)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// podLog keeps the last version of every pod of a job, deleted ones included, so a test
// can read what a pod carried when it was evicted.
type podLog struct {
	mu   sync.Mutex
	last map[string]*corev1.Pod
}

func (l *podLog) pod(name string) *corev1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[name]
}

func (s *site) watchPods(id uint32) *podLog {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.kube.CoreV1().Pods(kube.Namespace("nlp")).Watch(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", v1alpha1.JobIDLabel, id)})
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	l := &podLog{last: map[string]*corev1.Pod{}}
	done := make(chan struct{})
	s.t.Cleanup(func() { cancel(); w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				l.mu.Lock()
				l.last[p.Name] = p
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// ledgerStates waits until the server's ledger holds want among the job's state
// transitions, and returns them with the job's record.
func (s *site) ledgerStates(id uint32, want accounting.JobState, timeout time.Duration) ([]accounting.JobState, accounting.Job) {
	s.t.Helper()
	ctx := context.Background()
	ledger, err := store.Open(ctx, s.ledger)
	if err != nil {
		s.t.Fatal(err)
	}
	defer ledger.Close()
	var states []accounting.JobState
	var job accounting.Job
	e2e.WaitFor(s.t, fmt.Sprintf("ledger: job %d %s", id, want), timeout, func(ctx context.Context) (bool, error) {
		ts, err := ledger.Transitions(ctx, int64(id))
		if err != nil {
			return false, err
		}
		states = states[:0]
		for _, tr := range ts {
			states = append(states, tr.State)
		}
		jobs, err := ledger.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{int64(id)}})
		if err != nil || len(jobs) != 1 {
			return false, fmt.Errorf("%d ledger records (%v)", len(jobs), err)
		}
		job = jobs[0]
		return slices.Contains(states, want), fmt.Errorf("transitions %v", states)
	})
	return states, job
}

// h100Nodes are the rig's four H100 nodes, where the Slurm jobs of these tests run.
func h100Nodes() []string {
	var nodes []string
	for i := range 4 {
		nodes = append(nodes, cluster.NodeName("h100", i))
	}
	return nodes
}

// waitRunningPods waits until job id has n pods, all Running, and returns them. The
// scheduler marks a job RUNNING and creates its pods, already bound, side by side.
func (s *site) waitRunningPods(id uint32, n int) []corev1.Pod {
	s.t.Helper()
	var pods []corev1.Pod
	e2e.WaitFor(s.t, fmt.Sprintf("job %d's %d pods running", id, n), time.Minute, func(ctx context.Context) (bool, error) {
		pods = s.jobPods(ctx, id)
		running := len(pods) == n
		for _, p := range pods {
			running = running && p.Status.Phase == corev1.PodRunning
		}
		return running, fmt.Errorf("%d pods on %v", len(pods), nodesOf(pods))
	})
	return pods
}
