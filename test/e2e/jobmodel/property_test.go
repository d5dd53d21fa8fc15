package jobmodel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	slurmclient "github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// outcome is how a job of the mix ends.
type outcome int

const (
	succeed outcome = iota
	fail            // exit code 3
	oom             // exit code 137, which the rig's kwok reports as OOMKilled
	cancel          // scancel, or deleting the workload
	requeue         // scontrol requeue while running, then success (Slurm jobs only)
	evict           // one pod evicted while running (a drain, a preemption): requeued, then success (Slurm jobs only)
)

func (o outcome) String() string {
	return [...]string{"succeed", "fail", "oom", "cancel", "requeue", "evict"}[o]
}

// job is one job of the mix and what the test knows of it.
type job struct {
	kind    string // "slurm", "pod", "gang"
	outcome outcome
	id      uint32
	name    string // the manifest's name
	want    jobstate.State
}

func (j *job) String() string {
	return fmt.Sprintf("%s job %d (%s, %s)", j.kind, j.id, j.name, j.outcome)
}

// TestEveryViewAgrees: a seeded mix of jobs; while they run, each job's state is read from
// every view until they agree (a view that derived state by its own rule would never
// agree with the others at some point: FAILED in squeue while the ledger says RUNNING);
// at the end squeue's job/{id}, sacct and the dashboard API agree exactly on each job's
// final state, and it is the state its outcome calls for.
func TestEveryViewAgrees(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SLUICE_PROPERTY_SEED=%d reruns this mix)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, 14))
	s := startSite(t)

	var jobs []*job
	for i := range 9 {
		j := &job{kind: [...]string{"slurm", "pod", "gang"}[i%3]}
		outcomes := []outcome{succeed, fail, oom, cancel}
		if j.kind == "slurm" {
			outcomes = append(outcomes, requeue, evict)
		}
		j.outcome = outcomes[rnd.IntN(len(outcomes))]
		j.want = map[outcome]jobstate.State{succeed: jobstate.Completed, fail: jobstate.Failed, oom: jobstate.OutOfMemory,
			cancel: jobstate.Cancelled, requeue: jobstate.Completed, evict: jobstate.Completed}[j.outcome]
		s.start(j, i)
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		s.agree(j)
		switch j.outcome {
		case cancel:
			s.waitState(j, jobstate.Running)
			s.agree(j)
			s.cancel(j)
		case requeue:
			s.waitState(j, jobstate.Running)
			if err := s.rest.Requeue(context.Background(), j.id, false); err != nil {
				t.Fatalf("%s: requeue: %v", j, err)
			}
			s.agree(j)
		case evict:
			s.waitState(j, jobstate.Running)
			s.evictOne(j)
			s.agree(j)
		}
	}
	for _, j := range jobs {
		s.agree(j)
	}
	// The end: every job final in the ledger, as its outcome says, and the same in
	// squeue (while the workload is retained) and the dashboard's API.
	for _, j := range jobs {
		rec := s.waitLedgerFinal(j)
		t.Logf("%s: %s, %d requeues in the ledger", j, rec.State, rec.RequeueCount)
		if jobstate.State(rec.State) != j.want {
			t.Errorf("%s: ledger says %s, want %s", j, rec.State, j.want)
		}
		if (j.outcome == requeue || j.outcome == evict) && rec.RequeueCount != 1 {
			t.Errorf("%s: ledger requeue count %d, want 1", j, rec.RequeueCount)
		}
		if r, err := s.rest.Job(context.Background(), j.id); err == nil && r.State() != string(rec.State) {
			t.Errorf("%s: squeue says %s, the ledger %s", j, r.State(), rec.State)
		} else if err != nil && !slurmclient.IsNotFound(err) {
			t.Errorf("%s: job/{id}: %v", j, err)
		}
	}
}

// site is the test's `sluice server` on the shared rig.
type site struct {
	t    *testing.T
	rig  *cluster.Cluster
	crs  client.WithWatch
	rest *slurmclient.Client // as alice (account nlp, an operator)
	ns   string              // manifests' namespace
}

func startSite(t *testing.T) *site {
	rig := e2e.Rig(t)
	crs := sluiceproc.InstallSite(t, rig.RESTConfig())
	s := &site{t: t, rig: rig, crs: crs, ns: e2e.TeamNamespace(t, rig, "nlp")}
	dir := t.TempDir()
	keyFile, token := sluiceproc.KeyAndToken(t, dir, "alice")
	server := sluiceproc.Start(t, "sluice server", map[string]any{
		"kubeconfig": rig.Kubeconfig, "stateDir": filepath.Join(dir, "state"), "listen": "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false}, "webhook": map[string]any{"enabled": false},
		// alice submits and, as an operator, sees the manifest workloads too.
		"rest":  map[string]any{"jwtKeyFile": keyFile, "operators": []string{"alice"}},
		"slurm": map[string]any{"users": map[string]any{"alice": map[string]any{"uid": 1001, "gid": 1001}}},
	})
	s.rest = &slurmclient.Client{URL: "http://" + server.Addr(), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
	return s
}

// simulated is the run a job's outcome asks of its pods: a cancelled, requeued or evicted
// job runs until it is stopped; 8 s leaves time to see it running.
func simulated(o outcome) (time.Duration, int, bool) {
	switch o {
	case fail:
		return 8 * time.Second, 3, true
	case oom:
		return 8 * time.Second, 137, true
	case succeed:
		return 8 * time.Second, 0, true
	}
	return 0, 0, false
}

func (s *site) start(j *job, i int) {
	d, code, ends := simulated(j.outcome)
	switch j.kind {
	case "slurm":
		env := []string{"PATH=/bin:/usr/bin"}
		if ends {
			env = append(env, "SLUICE_SIM_DURATION="+d.String(), "SLUICE_SIM_EXIT_CODE="+strconv.Itoa(code))
		}
		if j.outcome == requeue || j.outcome == evict { // runs until requeued, then succeeds: the env is the job's, so it must end
			env = append(env, "SLUICE_SIM_DURATION=12s")
		}
		id, _, err := s.rest.Submit(context.Background(), map[string]any{"environment": env,
			"script": fmt.Sprintf("#!/bin/bash\n#SBATCH -J prop-%d -N %d --gres=gpu:1 --requeue\ntorchrun train.py\n", i, 1+i%2)})
		if err != nil {
			s.t.Fatalf("submit: %v", err)
		}
		j.id, j.name = id, fmt.Sprintf("prop-%d", i)
	case "pod":
		j.name = fmt.Sprintf("prop-pod-%d", i)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns, Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
			Spec: podSpec(corev1.RestartPolicyNever)}
		if ends {
			p.Annotations = cluster.SimulatedRun(d, code)
		}
		if err := s.crs.Create(context.Background(), p); err != nil {
			s.t.Fatal(err)
		}
		j.id = s.groupID(j, p.Name)
	case "gang":
		j.name = fmt.Sprintf("prop-gang-%d", i)
		two, none := int32(2), int32(0)
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}}, Spec: podSpec(corev1.RestartPolicyNever)}
		if ends {
			tpl.Annotations = cluster.SimulatedRun(d, code)
		}
		jb := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns, Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
			Spec: batchv1.JobSpec{Parallelism: &two, Completions: &two, BackoffLimit: &none, Template: tpl}}
		if err := s.crs.Create(context.Background(), jb); err != nil {
			s.t.Fatal(err)
		}
		j.id = s.groupID(j, j.name)
	}
}

func podSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{SchedulerName: "sluice", RestartPolicy: restart, Containers: []corev1.Container{{Name: "main", Image: "trainer",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")},
			Limits: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}}}}
}

// groupID waits for the PodGroup the pod grouper makes for the workload named owner and
// returns its job id.
func (s *site) groupID(j *job, owner string) uint32 {
	var id uint32
	e2e.WaitFor(s.t, "PodGroup of "+owner, time.Minute, func(ctx context.Context) (bool, error) {
		var pgs v1alpha1.PodGroupList
		if err := s.crs.List(ctx, &pgs, client.InNamespace(s.ns)); err != nil {
			return false, err
		}
		for _, pg := range pgs.Items {
			for _, o := range pg.OwnerReferences {
				if o.Name == owner {
					id = v1alpha1.JobIDOf(pg.Labels)
				}
			}
		}
		return id != 0, fmt.Errorf("no numbered PodGroup yet")
	})
	return id
}

// cancel ends the job as its user would: scancel, or deleting the manifest workload.
func (s *site) cancel(j *job) {
	ctx := context.Background()
	var err error
	switch j.kind {
	case "slurm":
		err = s.rest.Cancel(ctx, j.id, "")
	case "pod":
		err = s.crs.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns}})
	case "gang":
		err = s.crs.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns}}, client.PropagationPolicy(metav1.DeletePropagationForeground))
	}
	if err != nil {
		s.t.Fatalf("%s: cancel: %v", j, err)
	}
}

// evictOne evicts the first pod of the Slurm job's run through the Eviction API, as a
// drain or another scheduler's preemption would; the job was submitted with --requeue.
func (s *site) evictOne(j *job) {
	ctx := context.Background()
	var pods corev1.PodList
	if err := s.crs.List(ctx, &pods, client.MatchingLabels{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(j.id), 10)}); err != nil || len(pods.Items) == 0 {
		s.t.Fatalf("%s: its pods: %d (%v)", j, len(pods.Items), err)
	}
	p := pods.Items[0]
	err := s.rig.Client().CoreV1().Pods(p.Namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
	if err != nil {
		s.t.Fatalf("%s: evict %s: %v", j, p.Name, err)
	}
}

// views is one job's state in each view: "" where the view does not show it (gone).
type views struct{ rest, model, ledger string }

func (v views) agree() bool {
	return v.ledger != "" && (v.rest == "" || v.rest == v.ledger) && (v.model == "" || v.model == v.ledger)
}

// read reads the job's state from REST job/{id}, from the read model over the PodGroup
// and pods as the API server has them now, and from the ledger (sacct's API). A pending
// requeued job reads REQUEUED, as the ledger's last transition names it.
func (s *site) read(ctx context.Context, j *job) (views, error) {
	var v views
	r, err := s.rest.Job(ctx, j.id)
	switch {
	case err == nil:
		v.rest = r.State()
		if len(r.JobState) > 1 && r.JobState[1] == string(jobstate.Requeued) {
			v.rest = string(jobstate.Requeued)
		}
	case !slurmclient.IsNotFound(err):
		return v, err
	}
	var pgs v1alpha1.PodGroupList
	if err := s.crs.List(ctx, &pgs, client.MatchingLabels{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(j.id), 10)}); err != nil {
		return v, err
	}
	if len(pgs.Items) == 1 {
		pg := &pgs.Items[0]
		var pods corev1.PodList
		if err := s.crs.List(ctx, &pods, client.InNamespace(pg.Namespace)); err != nil {
			return v, err
		}
		var mine []*corev1.Pod
		for i := range pods.Items {
			if pods.Items[i].Annotations[v1alpha1.PodGroupAnnotation] == pg.Name {
				mine = append(mine, &pods.Items[i])
			}
		}
		m := jobstate.Derive(pg, mine, time.Now())
		v.model = string(m.State)
		if m.Requeued {
			v.model = string(jobstate.Requeued)
		}
	}
	rec, err := s.ledger(ctx, j)
	if err == nil {
		v.ledger = string(rec.State)
	}
	return v, nil
}

// agree waits until every view shows the job in the same state.
func (s *site) agree(j *job) {
	s.t.Helper()
	e2e.WaitFor(s.t, j.String()+": every view agrees", 2*time.Minute, func(ctx context.Context) (bool, error) {
		v, err := s.read(ctx, j)
		if err != nil {
			return false, err
		}
		return v.agree(), fmt.Errorf("views %+v", v)
	})
}

func (s *site) waitState(j *job, st jobstate.State) {
	s.t.Helper()
	e2e.WaitFor(s.t, fmt.Sprintf("%s %s", j, st), 2*time.Minute, func(ctx context.Context) (bool, error) {
		r, err := s.rest.Job(ctx, j.id)
		return err == nil && r.State() == string(st), fmt.Errorf("%v %v", r.JobState, err)
	})
}

func (s *site) ledger(ctx context.Context, j *job) (rec accounting.Job, err error) {
	res, err := s.rest.LedgerJobs(ctx, url.Values{"ids": {strconv.FormatUint(uint64(j.id), 10)}})
	if err != nil {
		return rec, err
	}
	if len(res.Jobs) != 1 {
		return rec, fmt.Errorf("%d ledger rows", len(res.Jobs))
	}
	return res.Jobs[0], nil
}

func (s *site) waitLedgerFinal(j *job) accounting.Job {
	s.t.Helper()
	var rec accounting.Job
	e2e.WaitFor(s.t, j.String()+" final in the ledger", 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		rec, err = s.ledger(ctx, j)
		return err == nil && rec.State.Final(), fmt.Errorf("%s %v", rec.State, err)
	})
	return rec
}
