package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/e2e"
)

// settle waits until every acknowledged job and every manifest pod has
// finished and is in the ledger as COMPLETED, restarting replicas that
// exited meanwhile (a Deployment would), then checks what the fault may
// not have done. It returns how long the work took to finish after start.
func (l *load) settle(ctx context.Context, sampler *gpuSampler) time.Duration {
	t := l.t
	t.Helper()
	l.wait()
	jobs := l.jobIDs()
	if got, want := len(jobs), l.sc.jobs+l.probes; got != want {
		t.Errorf("%d of %d jobs acknowledged", got, want)
	}
	ledger, err := store.Open(ctx, l.site.ledger)
	if err != nil {
		t.Fatalf("open the ledger: %v", err)
	}
	defer ledger.Close()
	e2e.WaitFor(t, "every acknowledged job and manifest pod COMPLETED in the ledger", l.sc.settleTime, func(ctx context.Context) (bool, error) {
		recs, err := l.ledgerJobs(ctx, ledger, jobs)
		if err != nil {
			return false, err
		}
		for id := range jobs {
			if r, ok := recs.slurm[int64(id)]; !ok || r.State != accounting.StateCompleted {
				return false, fmt.Errorf("job %d: %v in the ledger; in the cluster: %s", id, stateOf(r, ok), l.describeJob(ctx, id))
			}
		}
		if n := len(recs.pods); n != len(l.podNames()) {
			return false, fmt.Errorf("%d of %d manifest pods in the ledger", n, len(l.podNames()))
		}
		for name, r := range recs.pods {
			if r.State != accounting.StateCompleted {
				return false, fmt.Errorf("pod %s: %s", name, r.State)
			}
		}
		return true, nil
	})
	finished := time.Since(l.started)
	samples, missed, violations := sampler.finish()
	t.Logf("GPU sampler: %d samples, %d missed while the API server was away", samples, missed)
	for _, v := range violations {
		t.Errorf("GPU over-committed: %s", v)
	}
	l.checkStored(ctx, jobs)
	l.checkLedger(ctx, ledger, jobs)
	return finished
}

// ledgerRecords are the ledger's records of this test's work.
type ledgerRecords struct {
	slurm map[int64]accounting.Job  // by job id
	pods  map[string]accounting.Job // manifest pods' jobs, by PodGroup
	dup   []string                  // a second record of one pod's job
}

func (l *load) ledgerJobs(ctx context.Context, ledger *store.SQLStore, jobs map[uint32]int) (ledgerRecords, error) {
	out := ledgerRecords{slurm: map[int64]accounting.Job{}, pods: map[string]accounting.Job{}}
	all, err := ledger.Jobs(ctx, accounting.JobFilter{})
	if err != nil {
		return out, fmt.Errorf("ledger: %w", err)
	}
	for _, j := range all {
		switch {
		case jobs[uint32(j.JobID)] > 0:
			out.slurm[j.JobID] = j
		case j.Namespace == l.ns:
			if _, seen := out.pods[j.PodGroup]; seen {
				out.dup = append(out.dup, j.PodGroup)
			}
			out.pods[j.PodGroup] = j
		}
	}
	return out, nil
}

func stateOf(r accounting.Job, ok bool) string {
	if !ok {
		return "not in the ledger"
	}
	return string(r.State)
}

// checkStored: one PodGroup per acknowledged job and per submission (a
// retried one stored twice would have two ids with one name), and no job
// with more pods than nodes or a gang with some of its pods.
func (l *load) checkStored(ctx context.Context, jobs map[uint32]int) {
	t := l.t
	c := l.kc
	var groups v1alpha1.PodGroupList
	if err := c.List(ctx, &groups, client.InNamespace(kube.Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel}); err != nil {
		t.Fatal(err)
	}
	byName := map[string][]string{}
	stored := map[string]bool{}
	for _, pg := range groups.Items {
		stored[pg.Name] = true
		if s := pg.Spec.Slurm; s != nil && strings.HasPrefix(s.Name, l.tag+"-") {
			byName[s.Name] = append(byName[s.Name], pg.Labels[v1alpha1.JobIDLabel])
		}
	}
	for name, ids := range byName {
		if len(ids) > 1 {
			sort.Strings(ids)
			t.Errorf("submission %s stored as %d jobs %v: a retry created a second job", name, len(ids), ids)
		}
	}
	for id := range jobs {
		if !stored[kube.PodGroupName(id)] {
			t.Errorf("acknowledged job %d has no PodGroup: lost", id)
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(kube.Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel}); err != nil {
		t.Fatal(err)
	}
	perJob := map[uint32][]string{}
	for _, p := range pods.Items {
		id, _ := strconv.ParseUint(p.Labels[v1alpha1.JobIDLabel], 10, 32)
		if _, ours := jobs[uint32(id)]; ours {
			perJob[uint32(id)] = append(perJob[uint32(id)], p.Name+"@"+p.Spec.NodeName)
		}
	}
	for id, got := range perJob {
		if want := jobs[id]; len(got) != want {
			t.Errorf("job %d (%d nodes) has %d pods: %v", id, want, len(got), got)
		}
	}
	for _, name := range l.podNames() {
		p, err := e2e.Rig(t).Client().CoreV1().Pods(l.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("manifest pod %s: %v", name, podState(p, err))
		}
	}
}

func podState(p *corev1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("node %q, phase %s", p.Spec.NodeName, p.Status.Phase)
}

// checkLedger: every job once, run once (one run interval, never requeued),
// charged for the GPUs and nodes it held, no more.
func (l *load) checkLedger(ctx context.Context, ledger *store.SQLStore, jobs map[uint32]int) {
	t := l.t
	recs, err := l.ledgerJobs(ctx, ledger, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, pg := range recs.dup {
		t.Errorf("the ledger has two jobs for manifest PodGroup %s", pg)
	}
	runs, err := ledger.Runs(ctx, l.started.Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	runsOf := map[int64]int{}
	for _, r := range runs {
		runsOf[r.JobID]++
	}
	check := func(what string, j accounting.Job, nodes int) {
		if n := runsOf[j.JobID]; n != 1 {
			t.Errorf("%s (job %d) ran %d times in the ledger, want once", what, j.JobID, n)
		}
		if j.Allocated.GPUs != float64(nodes) || j.Allocated.Nodes != int64(nodes) {
			t.Errorf("%s (job %d) charged %v GPUs on %d nodes, want %d on %d", what, j.JobID, j.Allocated.GPUs, j.Allocated.Nodes, nodes, nodes)
		}
		// A rerun is a requeue: a RUNNING transition after REQUEUED. Two RUNNING
		// transitions in a row are one run whose start the recorder refined (the
		// PodGroup's start time, then the pod's).
		ts, err := ledger.Transitions(ctx, j.JobID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			if tr.State == accounting.StateRequeued {
				t.Errorf("%s (job %d) was requeued by the fault: %v", what, j.JobID, ts)
				break
			}
		}
		if j.RequeueCount != 0 {
			t.Errorf("%s (job %d) requeued %d times", what, j.JobID, j.RequeueCount)
		}
	}
	for id, nodes := range jobs {
		if j, ok := recs.slurm[int64(id)]; ok {
			check(fmt.Sprintf("Slurm job %d", id), j, nodes)
		}
	}
	for pg, j := range recs.pods {
		check("manifest pod group "+pg, j, 1)
	}
}

// describeJob says what the cluster holds of job id: its PodGroup's phase
// and its pods' nodes and phases, for a job that does not finish.
func (l *load) describeJob(ctx context.Context, id uint32) string {
	c := l.kc
	var pg v1alpha1.PodGroup
	if err := c.Get(ctx, client.ObjectKey{Namespace: kube.Namespace("nlp"), Name: kube.PodGroupName(id)}, &pg); err != nil {
		return err.Error()
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(pg.Namespace), client.MatchingLabels{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(id), 10)}); err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("PodGroup phase %q conditions %v;", pg.Status.Phase, pg.Status.Conditions)
	for _, p := range pods.Items {
		out += fmt.Sprintf(" pod %s on %q %s (deleting %v);", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	return out
}
