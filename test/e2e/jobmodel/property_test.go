package jobmodel

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
	slurmclient "github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// outcome is how a job of the mix ends.
type outcome int

const (
	succeed   outcome = iota
	fail              // exit code 3
	oom               // exit code 137, which the rig's kwok reports as OOMKilled
	cancel            // scancel, or deleting the workload
	requeue           // scontrol requeue while running, then success (Slurm jobs only)
	evict             // one pod evicted through the Eviction API while running (a drain, another scheduler's preemption)
	timeout           // past its time limit (a Slurm job's -t 1, a Job's activeDeadlineSeconds)
	nodefault         // its node is quarantined for a GPU fault and drained (Slurm jobs without --requeue, bare pods, Jobs)
	outcomes
)

func (o outcome) String() string {
	return [...]string{"succeed", "fail", "oom", "cancel", "requeue", "evict", "timeout", "nodefault"}[o]
}

// applies says which kinds of job an outcome is drawn for: a requeue is Slurm's; a
// time limit is a Slurm job's -t or a Job's (gang's) activeDeadlineSeconds; a node fault
// is drawn for every kind (a Job's drained pods fail it: its backoffLimit is 0). A
// PodGroup the user wrote runs to its pods' ends or is cancelled: nothing replaces a
// bare pod it loses, so what an eviction or a fault should leave of it is its author's
// to decide.
func (o outcome) applies(kind string) bool {
	if kind == "written" {
		return o == succeed || o == fail || o == oom || o == cancel
	}
	switch o {
	case requeue:
		return kind == "slurm"
	case timeout:
		return kind != "pod"
	}
	return true
}

// want is the state the job ends in. A Slurm job evicted with --requeue runs again and
// completes; a bare pod evicted is gone for good (PREEMPTED); a Job replaces its evicted
// pod within its backoffLimit and completes.
func (j *job) wantState() jobstate.State {
	switch j.outcome {
	case succeed, requeue:
		return jobstate.Completed
	case fail:
		return jobstate.Failed
	case oom:
		return jobstate.OutOfMemory
	case cancel:
		return jobstate.Cancelled
	case timeout:
		return jobstate.Timeout
	case nodefault:
		return jobstate.NodeFail
	}
	if j.kind == "pod" {
		return jobstate.Preempted
	}
	return jobstate.Completed
}

// disrupted: the test acts on the job while it runs, before its run may end.
func (o outcome) disrupted() bool { return o == requeue || o == evict }

// job is one job of the mix and what the test knows of it.
type job struct {
	kind    string // "slurm", "pod", "gang", "written" (a PodGroup the user wrote, two bare pods naming it)
	outcome outcome
	id      uint32
	name    string // the manifest's name
}

func (j *job) String() string {
	return fmt.Sprintf("%s job %d (%s, %s)", j.kind, j.id, j.name, j.outcome)
}

// faultNode is the node the mix's node faults quarantine; every other job keeps off it,
// so a fault ends only the jobs drawn for it.
const faultNode = "h100-3"

// mix draws n jobs (kinds in turn) so that every outcome appears at least once, then at
// random.
func mix(rnd *rand.Rand, n int) []*job {
	var jobs []*job
	for i := range n {
		jobs = append(jobs, &job{kind: [...]string{"slurm", "pod", "gang", "written"}[i%4]})
	}
	for o := range outcomes {
		for _, i := range rnd.Perm(n) {
			if j := jobs[i]; j.outcome == succeed && o.applies(j.kind) {
				j.outcome = o
				break
			}
		}
	}
	for _, j := range jobs {
		if j.outcome == succeed {
			for {
				if o := outcome(rnd.IntN(int(outcomes))); o.applies(j.kind) {
					j.outcome = o
					break
				}
			}
		}
	}
	return jobs
}

// TestEveryViewAgrees: a seeded mix of jobs; while they run, each job's state is read from
// every view until they agree (a view that derived state by its own rule would never
// agree with the others at some point: FAILED in squeue while the ledger says RUNNING);
// at the end squeue's job/{id}, sacct and the dashboard API agree exactly on each job's
// final state, and it is the state its outcome calls for. The views: REST job/{id}, the
// read model over the objects, the PodGroup's State column (kubectl get podgroups) and
// the ledger (sacct's and the dashboard's API).
func TestEveryViewAgrees(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SLUICE_PROPERTY_SEED=%d reruns this mix)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, 14))
	s := startSite(t)

	jobs := mix(rnd, 12)
	for i, j := range jobs {
		s.start(j, i)
	}
	// Disruptions first, while their runs last; then the node fault, once every job
	// drawn for it runs on the faulty node; then cancellations.
	slices.SortStableFunc(jobs, func(a, b *job) int {
		return cmp.Compare(b2i(!a.outcome.disrupted()), b2i(!b.outcome.disrupted()))
	})
	for _, j := range jobs {
		s.agree(j)
		switch j.outcome {
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
	var faulty []*job
	for _, j := range jobs {
		if j.outcome == nodefault {
			s.waitState(j, jobstate.Running)
			faulty = append(faulty, j)
		}
	}
	if len(faulty) > 0 {
		s.quarantine(faultNode)
	}
	for _, j := range jobs {
		s.agree(j)
		if j.outcome == cancel {
			s.waitState(j, jobstate.Running)
			s.agree(j)
			s.cancel(j)
		}
	}
	for _, j := range jobs {
		s.agree(j)
	}
	// The end: every job final in the ledger, as its outcome says, and the same in
	// squeue (while the workload is retained) and the dashboard's API.
	for _, j := range jobs {
		rec := s.waitLedgerFinal(j) // the dashboard's API
		t.Logf("%s: %s, %d requeues in the ledger", j, rec.State, rec.RequeueCount)
		if want := j.wantState(); jobstate.State(rec.State) != want {
			t.Errorf("%s: ledger says %s, want %s", j, rec.State, want)
		}
		if wantRequeues := b2i(j.kind == "slurm" && j.outcome.disrupted()); rec.RequeueCount != wantRequeues {
			t.Errorf("%s: ledger requeue count %d, want %d", j, rec.RequeueCount, wantRequeues)
		}
		if r, err := s.rest.Job(context.Background(), j.id); err == nil && r.State() != string(rec.State) {
			t.Errorf("%s: squeue says %s, the ledger %s", j, r.State(), rec.State)
		} else if err != nil && !slurmclient.IsNotFound(err) {
			t.Errorf("%s: job/{id}: %v", j, err)
		}
		if sacct := s.sacctState(j); sacct != string(rec.State) {
			t.Errorf("%s: sacct (slurmdb job/{id}) says %s, the dashboard's API %s", j, sacct, rec.State)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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

// simulated is the run a job's outcome asks of its pods: a cancelled, timed-out or
// faulted job runs until it is stopped; a disrupted one long enough to be disrupted
// first (the test disrupts those first), and its next run (the same pods' spec) ends;
// 8 s leaves time to see the others running.
func simulated(o outcome) (time.Duration, int, bool) {
	switch o {
	case fail:
		return 8 * time.Second, 3, true
	case oom:
		return 8 * time.Second, 137, true
	case succeed:
		return 8 * time.Second, 0, true
	case requeue, evict:
		return 40 * time.Second, 0, true
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
		opts := fmt.Sprintf("-J prop-%d -N %d --gres=gpu:1 --requeue -x %s", i, 1+i%2, faultNode)
		switch j.outcome {
		case timeout:
			opts = fmt.Sprintf("-J prop-%d -N 1 --gres=gpu:1 -t 1 -x %s", i, faultNode)
		case nodefault: // lost with its node: NODE_FAIL, not requeued
			opts = fmt.Sprintf("-J prop-%d -N 1 --gres=gpu:1 --no-requeue -w %s", i, faultNode)
		}
		id, _, err := s.rest.Submit(context.Background(), map[string]any{"environment": env,
			"script": fmt.Sprintf("#!/bin/bash\n#SBATCH %s\ntorchrun train.py\n", opts)})
		if err != nil {
			s.t.Fatalf("submit: %v", err)
		}
		j.id, j.name = id, fmt.Sprintf("prop-%d", i)
	case "pod":
		j.name = fmt.Sprintf("prop-pod-%d", i)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns, Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
			Spec: podSpec(corev1.RestartPolicyNever, j.outcome == nodefault)}
		if ends {
			p.Annotations = cluster.SimulatedRun(d, code)
		}
		if err := s.crs.Create(context.Background(), p); err != nil {
			s.t.Fatal(err)
		}
		j.id = s.groupID(j, p.Name)
	case "gang":
		j.name = fmt.Sprintf("prop-gang-%d", i)
		two, backoff := int32(2), int32(0)
		if j.outcome == evict {
			backoff = 2 // the evicted pod is replaced
		}
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
			Spec: podSpec(corev1.RestartPolicyNever, j.outcome == nodefault)}
		if ends {
			tpl.Annotations = cluster.SimulatedRun(d, code)
		}
		jb := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns, Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
			Spec: batchv1.JobSpec{Parallelism: &two, Completions: &two, BackoffLimit: &backoff, Template: tpl}}
		if j.outcome == timeout { // the Job controller fails it, past its deadline
			deadline := int64(30)
			jb.Spec.ActiveDeadlineSeconds = &deadline
		}
		if err := s.crs.Create(context.Background(), jb); err != nil {
			s.t.Fatal(err)
		}
		j.id = s.groupID(j, j.name)
	case "written":
		// As kubectl apply writes it: a gang of two, and its pods naming it. The pod
		// grouper numbers it, so every view lists it under a Slurm job id.
		j.name = fmt.Sprintf("prop-written-%d", i)
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns},
			Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "nlp"}}
		if err := s.crs.Create(context.Background(), pg); err != nil {
			s.t.Fatal(err)
		}
		for k := range 2 {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", j.name, k), Namespace: s.ns,
				Annotations: map[string]string{v1alpha1.PodGroupAnnotation: j.name}},
				Spec: podSpec(corev1.RestartPolicyNever, false)}
			if ends {
				maps.Copy(p.Annotations, cluster.SimulatedRun(d, code))
			}
			if err := s.crs.Create(context.Background(), p); err != nil {
				s.t.Fatal(err)
			}
		}
		j.id = s.writtenID(j)
	}
}

// writtenID waits for the pod grouper to number the PodGroup the test wrote for j.
func (s *site) writtenID(j *job) uint32 {
	var id uint32
	e2e.WaitFor(s.t, "job id of PodGroup "+j.name, time.Minute, func(ctx context.Context) (bool, error) {
		var pg v1alpha1.PodGroup
		if err := s.crs.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: j.name}, &pg); err != nil {
			return false, err
		}
		id = v1alpha1.JobIDOf(pg.Labels)
		return id != 0, fmt.Errorf("PodGroup %s not numbered yet (labels %v)", j.name, pg.Labels)
	})
	return id
}

// podSpec asks for one GPU, on the fault node (onFault) or anywhere else.
func podSpec(restart corev1.RestartPolicy, onFault bool) corev1.PodSpec {
	op := corev1.NodeSelectorOpNotIn
	if onFault {
		op = corev1.NodeSelectorOpIn
	}
	return corev1.PodSpec{SchedulerName: "sluice", RestartPolicy: restart, Containers: []corev1.Container{{Name: "main", Image: "trainer",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")},
			Limits: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: op, Values: []string{faultNode}}}}}}}}}
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
	case "written":
		// Its pods, then (once they are gone: a group deleted under running pods is
		// written again) the group, as its author would clean up.
		for k := 0; err == nil && k < 2; k++ {
			err = client.IgnoreNotFound(s.crs.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", j.name, k), Namespace: s.ns}}))
		}
		if err == nil {
			e2e.WaitFor(s.t, j.String()+": its pods gone", time.Minute, func(ctx context.Context) (bool, error) {
				for k := range 2 {
					err := s.crs.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: fmt.Sprintf("%s-%d", j.name, k)}, &corev1.Pod{})
					if err == nil || !apierrors.IsNotFound(err) {
						return false, err
					}
				}
				return true, nil
			})
			err = s.crs.Delete(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: s.ns}})
		}
	}
	if err != nil {
		s.t.Fatalf("%s: cancel: %v", j, err)
	}
}

// evictOne evicts the first pod of the job's run through the Eviction API, as a drain
// or another scheduler's preemption would (a Slurm job was submitted with --requeue).
func (s *site) evictOne(j *job) {
	ctx := context.Background()
	pods := s.pods(ctx, j)
	if len(pods) == 0 {
		s.t.Fatalf("%s: no pods to evict", j)
	}
	p := pods[0]
	err := s.rig.Client().CoreV1().Pods(p.Namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
	if err != nil {
		s.t.Fatalf("%s: evict %s: %v", j, p.Name, err)
	}
}

// pods are the job's bound pods not being deleted, by name: a Slurm job's carry its job
// id; a manifest workload's name its PodGroup.
func (s *site) pods(ctx context.Context, j *job) []corev1.Pod {
	id := strconv.FormatUint(uint64(j.id), 10)
	var pgs v1alpha1.PodGroupList
	if err := s.crs.List(ctx, &pgs, client.MatchingLabels{v1alpha1.JobIDLabel: id}); err != nil || len(pgs.Items) != 1 {
		s.t.Fatalf("%s: its PodGroup: %d (%v)", j, len(pgs.Items), err)
	}
	pg := pgs.Items[0]
	var list corev1.PodList
	if err := s.crs.List(ctx, &list, client.InNamespace(pg.Namespace)); err != nil {
		s.t.Fatalf("%s: its pods: %v", j, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if (p.Labels[v1alpha1.JobIDLabel] == id || p.Annotations[v1alpha1.PodGroupAnnotation] == pg.Name) && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// quarantine reports a GPU fault on node as its agent would (a True GPUXidError
// condition; the rig runs no agent): the remediation controller quarantines the node and
// drains its pods, marked with the fault.
func (s *site) quarantine(node string) {
	ctx := context.Background()
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"XID79","message":"XID 79 on GPU 0 (injected by the property test)","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
		health.GPUXidError, time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	if _, err := s.rig.Client().CoreV1().Nodes().PatchStatus(ctx, node, []byte(patch)); err != nil {
		s.t.Fatalf("fault on %s: %v", node, err)
	}
	s.t.Cleanup(func() {
		heal := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"False","reason":"NoFault","message":"healed"}]}}`, health.GPUXidError)
		_, _ = s.rig.Client().CoreV1().Nodes().PatchStatus(context.Background(), node, []byte(heal))
	})
}

// views is one job's state in each view: "" where the view does not show it (gone, or
// for the column not written yet). A pending requeued job reads REQUEUED, as the
// ledger's last transition names it; a completing job its final state, as sacct shows it.
type views struct{ rest, model, column, ledger string }

func (v views) agree() bool {
	same := func(s string) bool { return s == "" || s == v.ledger }
	return v.ledger != "" && same(v.rest) && same(v.model) && same(v.column)
}

// read reads the job's state from REST job/{id}, from the read model over the PodGroup
// and pods as the API server has them now, from the PodGroup's State column as kubectl
// shows it, and from the ledger (sacct's API).
func (s *site) read(ctx context.Context, j *job) (views, error) {
	var v views
	r, err := s.rest.Job(ctx, j.id)
	switch {
	case err == nil:
		v.rest = r.State()
		if slices.Contains(r.JobState, string(jobstate.Requeued)) {
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
		if v.column, err = s.stateColumn(ctx, pg); err != nil {
			return v, err
		}
	}
	rec, err := s.ledger(ctx, j)
	if err == nil {
		v.ledger = string(rec.State)
	}
	return v, nil
}

// stateColumn is the PodGroup's State column as kubectl get podgroups prints it (the
// server-side Table); a COMPLETING job reads as its final state, as the other views give
// it, and a pending requeued one as REQUEUED.
func (s *site) stateColumn(ctx context.Context, pg *v1alpha1.PodGroup) (string, error) {
	raw, err := s.rig.Client().CoreV1().RESTClient().Get().AbsPath("/apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version,
		"namespaces", pg.Namespace, "podgroups", pg.Name).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return "", err
	}
	for i, col := range table.ColumnDefinitions {
		if col.Name != "State" || len(table.Rows) != 1 {
			continue
		}
		st, _ := table.Rows[0].Cells[i].(string)
		switch {
		case st == "":
			return "<not written>", nil // must agree all the same: the recorder writes every group's
		case st == string(jobstate.Completing):
			return "", nil // its final state is not in the column while it completes
		case st == string(jobstate.Pending) && pg.Status.Requeues > 0:
			return string(jobstate.Requeued), nil
		}
		return st, nil
	}
	return "", fmt.Errorf("no State column in %v", table.ColumnDefinitions)
}

// sacctState is the job's state as slurmrestd's sacct endpoint (GET slurmdb job/{id})
// answers it.
func (s *site) sacctState(j *job) string {
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/slurmdb/%s/job/%d", s.rest.URL, slurmclient.Version, j.id), nil)
	req.Header.Set("X-SLURM-USER-TOKEN", s.rest.Token)
	resp, err := s.rest.HTTP.Do(req)
	if err != nil {
		s.t.Errorf("%s: slurmdb job: %v", j, err)
		return ""
	}
	defer resp.Body.Close()
	var out struct {
		Jobs []struct {
			State struct {
				Current []string `json:"current"`
			} `json:"state"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Jobs) != 1 || len(out.Jobs[0].State.Current) == 0 {
		s.t.Errorf("%s: slurmdb job: HTTP %d, %d jobs, %v", j, resp.StatusCode, len(out.Jobs), err)
		return ""
	}
	return out.Jobs[0].State.Current[0]
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
		// PREEMPTED with no requeue after it is final too (the ledger's Final leaves it
		// open, as a requeue may follow); the read model says so.
		return err == nil && jobstate.State(rec.State).Final(), fmt.Errorf("%s %v", rec.State, err)
	})
	return rec
}
