package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// load is the work a fault meets: a burst of Slurm jobs over REST, each
// retried with its Idempotency-Key until acknowledged, and a stream of
// one-GPU manifest pods, each create retried until the API server has it.
type load struct {
	t     *testing.T
	sc    scale
	site  *site
	ns    string // the manifest pods' namespace
	tag   string // names this test's jobs: "<tag>-<i>"
	token string
	// hangUpFirst makes every submission's first attempt drop its connection
	// before the answer (set before start).
	hangUpFirst bool
	kc          client.Client // reads Sluice's kinds

	mu      sync.Mutex
	acked   map[int]uint32 // job index -> job id answered
	nodes   map[uint32]int // job id -> nodes asked
	pods    []string       // manifest pods the API server has
	retries atomic.Int64   // submission attempts that got no answer or a 5xx
	probes  int            // recovery probes sent (probe)
	hangups atomic.Int64   // first attempts hung up on (TestClientDisconnectsMidSubmit)
	started time.Time
	done    sync.WaitGroup
}

func newLoad(t *testing.T, s *site, sc scale) *load {
	t.Helper()
	tok, err := slurmapi.MintToken(s.key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &load{t: t, sc: sc, site: s, ns: e2e.TeamNamespace(t, e2e.Rig(t), "nlp"), tag: sanitize(t.Name()),
		token: tok, kc: sluiceproc.InstallSite(t, e2e.Rig(t).RESTConfig()), acked: map[int]uint32{}, nodes: map[uint32]int{}}
}

// start runs the burst and the stream in the background; wait waits for both.
func (l *load) start(ctx context.Context) {
	l.started = time.Now()
	next := atomic.Int64{}
	for c := range l.sc.clients {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= l.sc.jobs || ctx.Err() != nil {
					return
				}
				l.submit(ctx, c, i)
			}
		}()
	}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		for i := range l.sc.pods {
			if l.createPod(ctx, fmt.Sprintf("pod-%d", i)) != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(l.sc.podEvery):
			}
		}
	}()
}

func (l *load) wait() { l.done.Wait() }

// jobBody is job i's submission: one GPU per node, two nodes for every
// gangEvery-th, running jobRun on the rig's simulated nodes.
func (l *load) jobBody(i int) (string, int) {
	nodes := 1
	if l.sc.gangEvery > 0 && i%l.sc.gangEvery == l.sc.gangEvery-1 {
		nodes = 2
	}
	job := map[string]any{
		"name":          fmt.Sprintf("%s-%d", l.tag, i),
		"environment":   []string{"PATH=/bin:/usr/bin", "SLUICE_SIM_DURATION=" + l.sc.jobRun.String()},
		"tres_per_node": "gres/gpu:1",
	}
	script := fmt.Sprintf("#!/bin/bash\n#SBATCH -N %d\nsrun hostname\n", nodes)
	body, _ := json.Marshal(map[string]any{"script": script, "job": job})
	return string(body), nodes
}

// submit sends job i until a replica acknowledges it, with one
// Idempotency-Key for every attempt; client c starts with its own replica.
func (l *load) submit(ctx context.Context, c, i int) {
	ctx, cancel := context.WithTimeout(ctx, l.sc.settleTime)
	defer cancel()
	body, nodes := l.jobBody(i)
	key := fmt.Sprintf("%s-%d", l.tag, i)
	var last string
	defer func() {
		if ctx.Err() != nil {
			l.t.Errorf("job %d never acknowledged; last attempt: %s", i, last)
		}
	}()
	if l.hangUpFirst {
		// 0 to 15 ms: before, during or after the server stores the job.
		if hangUp(ctx, l.site.addrs()[c%len(l.site.addrs())], l.token, key, body, time.Duration(i%16)*time.Millisecond) == nil {
			l.hangups.Add(1)
		}
	}
	for attempt := 0; ctx.Err() == nil; attempt++ {
		addrs := l.site.addrs()
		id, status, err := postSubmit(ctx, addrs[(c+attempt)%len(addrs)], l.token, key, body)
		switch {
		case err == nil && status == http.StatusOK:
			l.mu.Lock()
			l.acked[i], l.nodes[id] = id, nodes
			l.mu.Unlock()
			return
		case err == nil && status < 500 && status != http.StatusTooManyRequests:
			l.t.Errorf("job %d refused: %d", i, status)
			return
		}
		last = fmt.Sprintf("%d %v", status, err)
		l.retries.Add(1)
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// postSubmit is one submission attempt; a transport error means the answer
// never came.
func postSubmit(ctx context.Context, addr, token, key, body string) (uint32, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/slurm/v0.0.44/job/submit", strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("X-SLURM-USER-TOKEN", token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(slurmapi.IdempotencyKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc struct {
		JobID uint32 `json:"job_id"`
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &doc); err != nil || doc.JobID == 0 {
			return 0, resp.StatusCode, fmt.Errorf("200 without a job id: %s", raw)
		}
	}
	return doc.JobID, resp.StatusCode, nil
}

// createPod creates one one-GPU manifest pod for Sluice, retrying while the
// API server is away; an AlreadyExists on a retry means the lost attempt
// made it.
func (l *load) createPod(ctx context.Context, name string) error {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.QueueLabel: "nlp"},
			Annotations: cluster.SimulatedRun(l.sc.jobRun, 0)},
		Spec: corev1.PodSpec{
			SchedulerName: "sluice", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}},
		},
	}
	ctx, stop := context.WithTimeout(ctx, l.sc.settleTime)
	defer stop()
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := e2e.Rig(l.t).Client().CoreV1().Pods(l.ns).Create(cctx, pod, metav1.CreateOptions{})
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			l.mu.Lock()
			l.pods = append(l.pods, name)
			l.mu.Unlock()
			return nil
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return ctx.Err()
}

// ackedCount is how many jobs have been acknowledged so far.
func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// jobIDs are the acknowledged jobs' ids with the nodes each asked for.
func (l *load) jobIDs() map[uint32]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[uint32]int, len(l.nodes))
	for id, n := range l.nodes {
		out[id] = n
	}
	return out
}

func (l *load) podNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.pods...)
}

// waitAcked waits until n jobs are acknowledged: the fault then hits a
// burst in progress.
func (l *load) waitAcked(n int) {
	l.t.Helper()
	e2e.WaitFor(l.t, fmt.Sprintf("%d jobs acknowledged", n), 2*time.Minute, func(context.Context) (bool, error) {
		return l.ackedCount() >= n, fmt.Errorf("%d acknowledged", l.ackedCount())
	})
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
