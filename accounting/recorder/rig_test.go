package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/report"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// jobTimeout bounds a short simulated job from creation to its end on a loaded machine.
const jobTimeout = 90 * time.Second

// rigEnv is one test's cluster, namespace, ledger and controller-runtime client.
type rigEnv struct {
	c   *cluster.Cluster
	ns  string
	crs client.Client
	db  accounting.Store
}

func newRigEnv(t *testing.T) *rigEnv {
	c := e2e.Rig(t)
	ctx := context.Background()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crs, err := client.New(c.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &rigEnv{c: c, ns: e2e.Namespace(t, c), crs: crs, db: db}
}

// startRecorder runs a recorder until the returned stop is called (or the test ends)
// and waits for its first pass over the cluster.
func (e *rigEnv) startRecorder(t *testing.T) (stop func()) {
	r, err := New(Config{Store: e.db, RESTConfig: e.c.RESTConfig(), FlushInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-r.Synced():
	case err := <-done:
		t.Fatalf("recorder stopped before its first pass: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("recorder did not finish its first pass in a minute")
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("recorder: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// simPod is a Sluice pod that kwok runs for d and ends with exit code.
func simPod(name string, gpus int64, d time.Duration, exit int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.QueueLabel: "nlp"},
			Annotations: map[string]string{"sluice.dev/sim-duration": d.String(), "sluice.dev/sim-exit-code": fmt.Sprint(exit)}},
		Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, RestartPolicy: corev1.RestartPolicyNever,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
					v1alpha1.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)},
				Limits: corev1.ResourceList{v1alpha1.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
	}
}

// bind binds a pod to node the way Sluice's binder does: one Binding carrying the GPU
// assignment annotation, which the API server copies onto the pod.
func (e *rigEnv) bind(t *testing.T, pod, node string, gpus int) {
	a := map[string]any{"gpus": []map[string]int{}, "portion": 1}
	for i := range gpus {
		a["gpus"] = append(a["gpus"].([]map[string]int), map[string]int{"index": i})
	}
	raw, _ := json.Marshal(a)
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: e.ns, Annotations: map[string]string{v1alpha1.GPUAssignmentAnnotation: string(raw)}},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := e.c.Client().CoreV1().Pods(e.ns).Bind(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to %s: %v", pod, node, err)
	}
}

// slurmJob creates a PodGroup as the Slurm API stores a job, then its one pod as the
// scheduler creates it on start, and binds it.
func (e *rigEnv) slurmJob(t *testing.T, id string, node string, d time.Duration, exit int) {
	ctx := context.Background()
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "job-" + id, Namespace: e.ns, Labels: map[string]string{v1alpha1.JobIDLabel: id}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "nlp", Partition: "h100", QOS: "normal",
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 1, Resources: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), v1alpha1.GPUResource: resource.MustParse("2")}}},
			Slurm: &v1alpha1.SlurmJob{Name: "train-" + id, User: "alice", Nodes: 1, Tasks: 1, CPUsPerTask: 4}},
	}
	if err := e.crs.Create(ctx, pg); err != nil {
		t.Fatal(err)
	}
	p := simPod("job-"+id+"-0", 2, d, exit)
	p.Labels[v1alpha1.JobIDLabel], p.Labels[v1alpha1.NodeIndexLabel] = id, "0"
	p.Annotations[v1alpha1.PodGroupAnnotation] = pg.Name
	if _, err := e.c.Client().CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.bind(t, p.Name, node, 2)
}

// manifestJob creates a batch Job of Sluice's, groups its pod with the pod grouper and
// binds it.
func (e *rigEnv) manifestJob(t *testing.T, name, node string, d time.Duration, exit int) *v1alpha1.PodGroup {
	ctx := context.Background()
	tmpl := simPod("", 1, d, exit)
	zero := int32(0)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{v1alpha1.QueueLabel: "vision"}},
		Spec: batchv1.JobSpec{BackoffLimit: &zero, Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}}}
	job.Spec.Template.Labels = map[string]string{v1alpha1.QueueLabel: "vision"}
	if _, err := e.c.Client().BatchV1().Jobs(e.ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	e2e.WaitFor(t, "the Job's pod", jobTimeout, func(ctx context.Context) (bool, error) {
		pods, err := e.c.Client().CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = pods.Items[0]
		return true, nil
	})
	pg, err := podgrouper.EnsurePodGroup(ctx, e.crs, &pod)
	if err != nil {
		t.Fatal(err)
	}
	e.bind(t, pod.Name, node, 1)
	return pg
}

// waitFinal waits until the ledger shows every job id in a final state.
func (e *rigEnv) waitFinal(t *testing.T, ids ...int64) map[int64]accounting.Job {
	out := map[int64]accounting.Job{}
	e2e.WaitFor(t, fmt.Sprintf("jobs %v final in the ledger", ids), jobTimeout, func(ctx context.Context) (bool, error) {
		jobs, err := e.db.Jobs(ctx, accounting.JobFilter{JobIDs: ids})
		if err != nil {
			return false, err
		}
		for _, j := range jobs {
			out[j.JobID] = j
		}
		for _, id := range ids {
			if !out[id].State.Closed() {
				return false, fmt.Errorf("job %d: %q", id, out[id].State)
			}
		}
		return true, nil
	})
	return out
}

// podRun is when kwok ran the pod: its start and its container's finish.
func (e *rigEnv) podRun(t *testing.T, name string) (time.Time, time.Time) {
	p, err := e.c.Client().CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.StartTime == nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("pod %s did not run to the end: %+v", name, p.Status)
	}
	return p.Status.StartTime.UTC(), p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.UTC()
}

// gpuSeconds totals the GPU-seconds of the recorded runs of the given jobs (the rig is
// shared: the ledger also records what other tests left running), and counts the runs.
func gpuSeconds(t *testing.T, db accounting.Store, ids ...int64) (float64, int) {
	runs, err := db.Runs(context.Background(), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	total, n := 0.0, 0
	for _, r := range runs {
		if slices.Contains(ids, r.JobID) {
			total += r.Allocated.GPUs * r.End.Sub(r.Start).Seconds()
			n++
		}
	}
	return total, n
}

// sacctRow is what sacct should print for a finished job.
type sacctRow struct {
	name, account, state, exitCode string
	start, end                     time.Time
	gpus                           int
}

// sacctShows renders sacct as a user reads it (text, these fields) and checks each job's
// line: name, account, state, exit code, start, end and elapsed to the second, and the
// GPUs in AllocTRES.
func sacctShows(t *testing.T, db accounting.Store, want map[int64]sacctRow) {
	t.Helper()
	var ids []int64
	for id := range want {
		ids = append(ids, id)
	}
	jobs, err := report.Sacct(context.Background(), db, report.SacctQuery{Filter: accounting.JobFilter{JobIDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	table, err := report.SacctTable(jobs, "JobIDRaw%20,JobName%20,Account,State,ExitCode,Start,End,Elapsed,AllocTRES%60", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := table.WriteText(&out, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2+len(want) {
		t.Fatalf("sacct printed %d lines, want a header, dashes and %d jobs:\n%s", len(lines), len(want), out.String())
	}
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		id, _ := strconv.ParseInt(f[0], 10, 64)
		w, ok := want[id]
		if !ok || len(f) != 9 {
			t.Errorf("sacct line %q: not one of %v with 9 fields", line, ids)
			continue
		}
		stamp := func(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05") }
		secs := int64(w.end.Sub(w.start).Seconds())
		elapsed := fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs%3600/60, secs%60)
		if got, exp := f[1:8], []string{w.name, w.account, w.state, w.exitCode, stamp(w.start), stamp(w.end), elapsed}; !slices.Equal(got, exp) {
			t.Errorf("sacct shows job %d as %v, want %v", id, got, exp)
		}
		if !slices.Contains(strings.Split(f[8], ","), fmt.Sprintf("gres/gpu=%d", w.gpus)) {
			t.Errorf("sacct shows job %d with AllocTRES %s, want gres/gpu=%d", id, f[8], w.gpus)
		}
	}
}

// slurmdbShows reads a finished job over the REST API's slurmdb/job/{id}, served from the
// ledger as the server wires it, and checks its state, times and GPUs.
func slurmdbShows(t *testing.T, db accounting.Store, id int64, start, end time.Time, gpus float64) {
	t.Helper()
	key := []byte("recorder-rig-test-key-of-32-byte")
	api, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: key}}, slurmapi.WithLedger(nil, accounting.Ledger{Store: db}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	token, err := slurmapi.MintToken(key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/slurmdb/v0.0.44/job/%d", srv.URL, id), nil)
	req.Header.Set("X-SLURM-USER-TOKEN", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Jobs []struct {
			State struct {
				Current []string `json:"current"`
			} `json:"state"`
			Time struct {
				Start, End int64
			} `json:"time"`
			TRES struct {
				Allocated []struct {
					Type, Name string
					Count      float64
				} `json:"allocated"`
			} `json:"tres"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || len(body.Jobs) != 1 {
		t.Fatalf("slurmdb/job/%d: %d, %v, %+v", id, resp.StatusCode, err, body)
	}
	j := body.Jobs[0]
	held := -1.0
	for _, tres := range j.TRES.Allocated {
		if tres.Type == "gres" && tres.Name == "gpu" {
			held = tres.Count
		}
	}
	if !slices.Equal(j.State.Current, []string{"COMPLETED"}) || j.Time.Start != start.Unix() || j.Time.End != end.Unix() || held != gpus {
		t.Errorf("slurmdb/job/%d: %+v, want COMPLETED from %d to %d on %v GPUs", id, j, start.Unix(), end.Unix(), gpus)
	}
}

// A Slurm job and a manifest Job run on kwok; the ledger, and sacct's report of it, show
// both with their states, times, exit codes and GPUs, and sreport's allocated
// GPU-seconds equal what the pods held.
func TestRecordsSlurmAndManifestJobs(t *testing.T) {
	e := newRigEnv(t)
	e.startRecorder(t)
	e.slurmJob(t, "9001", cluster.NodeName("h100", 0), 3*time.Second, 0)
	pg := e.manifestJob(t, "eval", cluster.NodeName("h100", 1), 2*time.Second, 3)
	manifestID := JobID(pg)
	jobs := e.waitFinal(t, 9001, manifestID)

	slurm, manifest := jobs[9001], jobs[manifestID]
	start, end := e.podRun(t, "job-9001-0")
	if slurm.State != accounting.StateCompleted || slurm.User != "alice" || slurm.Account != "nlp" || slurm.Origin != accounting.OriginSlurm ||
		slurm.Allocated.GPUs != 2 || slurm.NodeList != cluster.NodeName("h100", 0) || !slurm.Start.Equal(start) || !slurm.End.Equal(end) {
		t.Errorf("Slurm job %+v: want alice's COMPLETED nlp job on 2 GPUs of h100-0 from %s to %s", slurm, start, end)
	}
	pods, err := e.c.Client().CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=eval"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("eval pods: %v %v", pods, err)
	}
	mstart, mend := e.podRun(t, pods.Items[0].Name)
	if manifest.State != accounting.StateFailed || manifest.ExitCode != 3 || manifest.Account != "vision" || manifest.Origin != accounting.OriginKubernetes ||
		manifest.Name != "eval" || manifest.Allocated.GPUs != 1 || !manifest.Start.Equal(mstart) || !manifest.End.Equal(mend) {
		t.Errorf("manifest job %+v: want eval FAILED with exit code 3 in vision on 1 GPU from %s to %s", manifest, mstart, mend)
	}
	sacctShows(t, e.db, map[int64]sacctRow{
		9001:       {"train-9001", "nlp", "COMPLETED", "0:0", start, end, 2},
		manifestID: {"eval", "vision", "FAILED", "3:0", mstart, mend, 1},
	})
	slurmdbShows(t, e.db, 9001, start, end, 2)
	got, _ := gpuSeconds(t, e.db, 9001, manifestID)
	want := 2*end.Sub(start).Seconds() + mend.Sub(mstart).Seconds()
	if got != want {
		t.Errorf("ledger holds %v GPU-seconds, the pods held %v", got, want)
	}

	// sreport's cluster Utilization over the jobs' window counts their GPU-seconds to the
	// second, against the capacity of the rig's nodes the recorder recorded.
	ctx := context.Background()
	from, to := start.Add(-time.Minute), time.Now().UTC().Truncate(time.Second)
	if mstart.Before(start) {
		from = mstart.Add(-time.Minute)
	}
	now := to.Add(time.Second)
	util, err := report.ClusterUtilization(ctx, e.db, report.SreportQuery{Start: from, End: to, Units: report.Seconds}, now)
	if err != nil {
		t.Fatal(err)
	}
	others := 0.0 // whatever else ran on the shared rig in that window
	runs, err := e.db.Runs(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.JobID != 9001 && r.JobID != manifestID {
			a, b := r.Start, r.End
			if a.Before(from) {
				a = from
			}
			if b.IsZero() || b.After(to) {
				b = to
			}
			others += r.Allocated.GPUs * b.Sub(a).Seconds()
		}
	}
	if util[0].Allocated != want+others {
		t.Errorf("sreport allocated %v GPU-seconds, the jobs held %v (+%v by others)", util[0].Allocated, want, others)
	}
	nodes, err := e.db.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	capacity := 0.0 // GPU-seconds the nodes offered in the window, from when each joined
	for _, n := range nodes {
		if n.Name == cluster.NodeName("h100", 0) && (n.TRES.GPUs != 8 || n.TRES.GPUMemMB != 8*81920 || n.Partition != "h100") {
			t.Errorf("node %s recorded with %+v in partition %q, want 8 GPUs of 80 GiB in h100", n.Name, n.TRES, n.Partition)
		}
		joined := from
		if n.Added.After(from) {
			joined = n.Added
		}
		capacity += n.TRES.GPUs * to.Sub(joined).Seconds()
	}
	if len(nodes) != e.c.Spec().NodeCount() || util[0].Reported != capacity || util[0].Idle != capacity-util[0].Allocated {
		t.Errorf("%d nodes recorded (want %d), reported %v GPU-seconds, idle %v (want %v, %v)", len(nodes), e.c.Spec().NodeCount(),
			util[0].Reported, util[0].Idle, capacity, capacity-util[0].Allocated)
	}
}

// The recorder is stopped while a job runs and the job ends while it is down; after a
// restart the ledger has the job's whole run once, and further restarts change nothing.
func TestRestartLosesAndDoublesNothing(t *testing.T) {
	e := newRigEnv(t)
	stop := e.startRecorder(t)
	e.slurmJob(t, "9101", cluster.NodeName("h100", 2), 6*time.Second, 0)
	e2e.WaitFor(t, "job 9101 RUNNING in the ledger", jobTimeout, func(ctx context.Context) (bool, error) {
		jobs, err := e.db.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{9101}})
		return err == nil && len(jobs) == 1 && jobs[0].State == accounting.StateRunning, err
	})
	stop()
	e2e.WaitFor(t, "pod of job 9101 finished", jobTimeout, func(ctx context.Context) (bool, error) {
		p, err := e.c.Client().CoreV1().Pods(e.ns).Get(ctx, "job-9101-0", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	start, end := e.podRun(t, "job-9101-0")

	e.startRecorder(t)
	j := e.waitFinal(t, 9101)[9101]
	if j.State != accounting.StateCompleted || !j.Start.Equal(start) || !j.End.Equal(end) {
		t.Errorf("after restart: %+v, want COMPLETED from %s to %s", j, start, end)
	}
	total, runs := gpuSeconds(t, e.db, 9101)
	if want := 2 * end.Sub(start).Seconds(); total != want || runs != 1 {
		t.Errorf("after restart: %d runs, %v GPU-seconds; want 1 run of %v", runs, total, want)
	}
	hist, err := e.db.Transitions(context.Background(), 9101)
	if err != nil {
		t.Fatal(err)
	}

	stopAgain := e.startRecorder(t) // a third start replays everything again
	stopAgain()
	total2, runs2 := gpuSeconds(t, e.db, 9101)
	hist2, err := e.db.Transitions(context.Background(), 9101)
	if err != nil {
		t.Fatal(err)
	}
	if total2 != total || runs2 != runs || len(hist2) != len(hist) {
		t.Errorf("a replay changed the ledger: %v GPU-s in %d runs, %d transitions; before %v in %d, %d", total2, runs2, len(hist2), total, runs, len(hist))
	}
}
