package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// batchServer is a REST server whose backend commits submissions in
// groups into its own namespace, so each test sees only its batches.
func batchServer(t *testing.T, window time.Duration) (*httptest.Server, *Backend) {
	t.Helper()
	_, admin := rigServer(t) // CRDs and the seed site
	ns := batchNamespace(t, admin)
	return rigServerWith(t, e2e.Rig(t).RESTConfig(), Options{Namespace: ns, IDBlock: 10, SubmitWindow: window})
}

// batchNamespaces counts the namespaces batchNamespace made.
var batchNamespaces atomic.Uint32

// batchNamespace creates a fresh namespace for one test's batches, with
// its own job id counter starting a million ids past the last one's, so
// its jobs never take the id of another test's job.
func batchNamespace(t testing.TB, b *Backend) string {
	t.Helper()
	name := "batches-" + strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	next := fmt.Sprint((batchNamespaces.Add(1) + 1) * 1_000_000)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sluice-job-ids", Namespace: name}, Data: map[string]string{counterKey: next}},
	} {
		if err := b.c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return name
}

// submitAll posts n submissions at once and returns the job ids answered.
func submitAll(t *testing.T, ts *httptest.Server, n int, body string) []uint32 {
	t.Helper()
	ids := make([]uint32, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", body)
			if status != http.StatusOK {
				t.Errorf("submit: %d %v", status, doc)
				return
			}
			ids[i] = uint32(doc["job_id"].(float64))
		})
	}
	wg.Wait()
	t.Cleanup(func() { removeJobs(t, ids) })
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// removeJobs deletes the PodGroups of ids, so no later test's scheduler
// places them.
func removeJobs(t *testing.T, ids []uint32) {
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(e2e.Rig(t).RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace("nlp"), Name: PodGroupName(id)}}
		if err := c.Delete(context.Background(), pg); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("remove job %d: %v", id, err)
		}
	}
}

func batches(t testing.TB, b *Backend) []corev1.ConfigMap {
	t.Helper()
	list, err := listBatches(context.Background(), b.c, b.opts.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// storedGroup is job id's PodGroup as stored, nil if there is none.
func storedGroup(t *testing.T, b *Backend, id uint32) *v1alpha1.PodGroup {
	t.Helper()
	pgs, err := b.listGroups(context.Background(), client.MatchingLabels{v1alpha1.JobIDLabel: fmt.Sprint(id)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pgs) > 1 {
		t.Fatalf("job %d has %d PodGroups", id, len(pgs))
	}
	if len(pgs) == 0 {
		return nil
	}
	return &pgs[0]
}

// runQueue runs a SubmitQueue for the backend's batches until the test
// ends; Run must then return nil.
func runQueue(t *testing.T, b *Backend) {
	t.Helper()
	q, err := NewSubmitQueue(e2e.Rig(t).RESTConfig(), b.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("submit queue: %v", err)
		}
	})
}

// waitMaterialized waits until every job of ids has its PodGroup and no
// batch is left.
func waitMaterialized(t *testing.T, b *Backend, ids []uint32) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		missing := 0
		for _, id := range ids {
			if storedGroup(t, b, id) == nil {
				missing++
			}
		}
		left := len(batches(t, b))
		if missing == 0 && left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs still have no PodGroup, %d batches left", missing, len(ids), left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func jobOf(t *testing.T, ts *httptest.Server, id uint32) map[string]any {
	t.Helper()
	status, doc := call(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.45/job/%d", id), "")
	if status != http.StatusOK {
		t.Fatalf("job %d: %d %v", id, status, doc)
	}
	return doc["jobs"].([]any)[0].(map[string]any)
}

// TestGroupCommitOnRig: concurrent submissions are acknowledged in fewer
// writes than jobs, squeue shows them PENDING before any PodGroup exists,
// and the SubmitQueue makes each one PodGroup with the job's spec and its
// submit time unchanged.
func TestGroupCommitOnRig(t *testing.T) {
	ts, b := batchServer(t, 50*time.Millisecond)
	before := time.Now().Add(-time.Second)
	ids := submitAll(t, ts, 24, gpuJob)
	if n := len(batches(t, b)); n == 0 || n >= len(ids) {
		t.Errorf("%d submissions were stored in %d batches, want at least one and fewer than one per job", len(ids), n)
	}
	submitted := map[uint32]float64{}
	for _, id := range ids {
		if storedGroup(t, b, id) != nil {
			t.Fatalf("job %d has a PodGroup before the submit queue ran", id)
		}
		j := jobOf(t, ts, id)
		at := j["submit_time"].(map[string]any)["number"].(float64)
		if j["job_state"].([]any)[0] != "PENDING" || j["state_reason"] != "None" || j["user_name"] != "alice" || int64(at) < before.Unix() {
			t.Errorf("batched job %d reads as %v %v user %v submitted %v", id, j["job_state"], j["state_reason"], j["user_name"], at)
		}
		submitted[id] = at
	}
	_, doc := call(t, ts, "alice", "GET", "/slurm/v0.0.45/jobs", "")
	listed := map[uint32]bool{}
	for _, j := range doc["jobs"].([]any) {
		listed[uint32(j.(map[string]any)["job_id"].(float64))] = true
	}
	for _, id := range ids {
		if !listed[id] {
			t.Errorf("GET jobs does not list batched job %d", id)
		}
	}

	runQueue(t, b)
	waitMaterialized(t, b, ids)
	for _, id := range ids {
		pg := storedGroup(t, b, id)
		if pg.Namespace != "slurm-nlp" || pg.Spec.MinMember != 2 || pg.Spec.Slurm.User != "alice" || pg.Annotations[SubmitTimeAnnotation] == "" {
			t.Errorf("job %d became %s/%s minMember %d user %q annotations %v", id, pg.Namespace, pg.Name, pg.Spec.MinMember, pg.Spec.Slurm.User, pg.Annotations)
		}
		j := jobOf(t, ts, id)
		if at := j["submit_time"].(map[string]any)["number"].(float64); at != submitted[id] || j["job_state"].([]any)[0] != "PENDING" {
			t.Errorf("materialized job %d: %v submitted %v, before %v", id, j["job_state"], at, submitted[id])
		}
	}
}

// TestBatchJobLimitOnRig: a batch holds at most SubmitBatchJobs jobs; the
// rest of a burst goes into further batches.
func TestBatchJobLimitOnRig(t *testing.T) {
	_, admin := rigServer(t)
	ts, b := rigServerWith(t, e2e.Rig(t).RESTConfig(), Options{Namespace: batchNamespace(t, admin), IDBlock: 10, SubmitWindow: 200 * time.Millisecond, SubmitBatchJobs: 4})
	ids := submitAll(t, ts, 10, gpuJob)
	stored := 0
	for _, cm := range batches(t, b) {
		if len(cm.Data) > 4 {
			t.Errorf("batch %s holds %d jobs, limit 4", cm.Name, len(cm.Data))
		}
		stored += len(cm.Data)
	}
	if stored != len(ids) {
		t.Errorf("batches hold %d jobs, %d were acknowledged", stored, len(ids))
	}
}

// TestChangesToBatchedJobsOnRig: scancel, hold and time limit changes of
// a job still in a batch act on it (its PodGroup is created first), and
// the SubmitQueue then leaves those changes alone.
func TestChangesToBatchedJobsOnRig(t *testing.T) {
	ts, b := batchServer(t, 2*time.Millisecond)
	ids := submitAll(t, ts, 3, gpuJob)
	cancelled, held, limited := ids[0], ids[1], ids[2]
	path := func(id uint32) string { return fmt.Sprintf("/slurm/v0.0.45/job/%d", id) }
	steps := []struct {
		name, user, method, path, body string
		status                         int
	}{
		{"scancel", "alice", "DELETE", path(cancelled), "", http.StatusOK},
		{"hold", "alice", "POST", path(held), `{"hold":true}`, http.StatusOK},
		{"time limit", "alice", "POST", path(limited), `{"time_limit":{"set":true,"number":7}}`, http.StatusOK},
		{"requeue a pending job", "alice", "GET", fmt.Sprintf("/slurm/v0.0.45/job/%d/requeue", limited), "", http.StatusConflict},
		{"bob cancels alice's job", "bob", "DELETE", path(held), "", http.StatusForbidden},
	}
	for _, s := range steps {
		if status, doc := call(t, ts, s.user, s.method, s.path, s.body); status != s.status {
			t.Errorf("%s: %d %v, want %d", s.name, status, doc, s.status)
		}
	}
	check := func(when string) {
		t.Helper()
		want := map[uint32]struct{ state, reason, limit string }{
			cancelled: {"CANCELLED", "None", "30"},
			held:      {"PENDING", "JobHeldUser", "30"},
			limited:   {"PENDING", "None", "7"},
		}
		for id, w := range want {
			j := jobOf(t, ts, id)
			limit := fmt.Sprint(j["time_limit"].(map[string]any)["number"])
			if j["job_state"].([]any)[0] != w.state || j["state_reason"] != w.reason || limit != w.limit {
				t.Errorf("%s: job %d is %v %v limit %s, want %s %s limit %s", when, id, j["job_state"], j["state_reason"], limit, w.state, w.reason, w.limit)
			}
			if storedGroup(t, b, id) == nil {
				t.Errorf("%s: changed job %d has no PodGroup", when, id)
			}
		}
	}
	check("before the submit queue ran")
	runQueue(t, b)
	waitMaterialized(t, b, ids)
	check("after the submit queue ran")
}

// TestDependencyOnBatchedJobOnRig: a job may name a job still in a batch
// in its --dependency; holding it creates the job it names first, so the
// lifecycle never finds the dependency missing.
func TestDependencyOnBatchedJobOnRig(t *testing.T) {
	ts, b := batchServer(t, 2*time.Millisecond)
	first := submitAll(t, ts, 1, gpuJob)[0]
	dependent := strings.Replace(gpuJob, `"job":{`, fmt.Sprintf(`"job":{"dependency":"afterok:%d",`, first), 1)
	then := submitAll(t, ts, 1, dependent)[0]
	if j := jobOf(t, ts, then); j["job_state"].([]any)[0] != "PENDING" || j["dependency"] != fmt.Sprintf("afterok:%d", first) {
		t.Errorf("batched dependent job reads as %v dependency %v", j["job_state"], j["dependency"])
	}
	if status, doc := call(t, ts, "alice", "POST", fmt.Sprintf("/slurm/v0.0.45/job/%d", then), `{"hold":true}`); status != http.StatusOK {
		t.Fatalf("hold: %d %v", status, doc)
	}
	for _, id := range []uint32{first, then} {
		if storedGroup(t, b, id) == nil {
			t.Errorf("after holding job %d, job %d has no PodGroup", then, id)
		}
	}
}

// TestOversizeJobBypassesBatchOnRig: a job too large to share a batch (a
// script within its limit whose JSON escapes make it larger than a batch
// holds) is created at once, as without a window.
func TestOversizeJobBypassesBatchOnRig(t *testing.T) {
	ts, b := batchServer(t, 2*time.Millisecond)
	script := "#!/bin/bash\n# " + strings.Repeat("<", submitBatchBytes/6+1000) + "\ntrue\n"
	id := submitAll(t, ts, 1, fmt.Sprintf(`{"script":%q,"job":{"environment":["PATH=/bin"]}}`, script))[0]
	if pg := storedGroup(t, b, id); pg == nil || len(pg.Spec.Slurm.Script) != len(script) {
		t.Errorf("oversize job %d was not created directly with its whole script", id)
	}
	if left := batches(t, b); len(left) != 0 {
		t.Errorf("oversize job left %d batches", len(left))
	}
}

// TestBatchedArrayOnRig: an array still in a batch reads as its one
// PENDING record, its tasks as the record, and scancel of one task
// creates the record and drops the task from it.
func TestBatchedArrayOnRig(t *testing.T) {
	ts, b := batchServer(t, 2*time.Millisecond)
	script := `{"script":"#!/bin/bash\n#SBATCH -p h100 --gres=gpu:1 --array=0-5\nsleep 600\n","job":{"account":"nlp","environment":["PATH=/bin"]}}`
	id := submitAll(t, ts, 1, script)[0]
	tasks := func(want string) {
		t.Helper()
		jobs := arrayJobs(t, ts, id)
		if len(jobs) != 1 || jobs[0]["job_state"].([]any)[0] != "PENDING" || jobs[0]["array_task_string"] != want || number(jobs[0]["array_job_id"]) != int(id) {
			t.Errorf("array %d reads as %v, want one PENDING record with tasks %s", id, jobs, want)
		}
	}
	tasks("0-5")
	task3 := fmt.Sprintf("/slurm/v0.0.44/job/%d_3", id)
	if status, doc := call(t, ts, "alice", "GET", task3, ""); status != http.StatusOK || doc["jobs"].([]any)[0].(map[string]any)["job_state"].([]any)[0] != "PENDING" {
		t.Errorf("task 3 of batched array: %d %v", status, doc)
	}
	if status, doc := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.44/job/%d_4", id), ""); status != http.StatusOK {
		t.Fatalf("scancel %d_4: %d %v", id, status, doc)
	}
	if storedGroup(t, b, id) == nil {
		t.Errorf("scancel of a task left the batched array %d without its record", id)
	}
	tasks("0-3,5")
}

// TestFailedBatchWriteOnRig: when the batch write is refused (here the
// server's RBAC lacks creating ConfigMaps), every client of that batch is
// answered with the error and nothing is stored.
func TestFailedBatchWriteOnRig(t *testing.T) {
	_, admin := rigServer(t)
	ctx := context.Background()
	ns := batchNamespace(t, admin)
	const user = "sluice-without-configmap-create"
	// Everything a submission needs but creating the batch.
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "update"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
	}
	for _, o := range objs {
		if err := admin.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(e2e.Rig(t).RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	ts, b := rigServerWith(t, cfg, Options{Namespace: ns, IDBlock: 10, SubmitWindow: 50 * time.Millisecond})
	groups := countGroups(t, b) // stored and batched

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", gpuJob)
			errs, _ := doc["errors"].([]any)
			if status != http.StatusBadGateway || len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), "create configmaps in namespace "+ns) {
				t.Errorf("submit with a refused batch write: %d %v, want 502 naming what RBAC lacks", status, doc)
			}
		})
	}
	wg.Wait()
	if left := batches(t, b); len(left) != 0 {
		t.Errorf("a refused batch left %d batches", len(left))
	}
	if after := countGroups(t, b); after != groups {
		t.Errorf("a refused batch changed the job count from %d to %d", groups, after)
	}
}

// TestSubmitQueueRestartedOnRig: a queue that stopped after creating some
// of a batch's jobs (here created, and one of them changed, before the
// queue runs) creates each remaining job once and leaves the created ones
// as they are.
func TestSubmitQueueRestartedOnRig(t *testing.T) {
	ts, b := batchServer(t, 50*time.Millisecond)
	ids := submitAll(t, ts, 6, gpuJob)
	ctx := context.Background()
	done := ids[:2] // as a queue would have left them before it stopped
	for _, id := range done {
		pg, err := b.podGroup(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.materialize(ctx, pg); err != nil {
			t.Fatal(err)
		}
	}
	if status, doc := call(t, ts, "alice", "POST", fmt.Sprintf("/slurm/v0.0.45/job/%d", done[0]), `{"hold":true}`); status != http.StatusOK {
		t.Fatalf("hold: %d %v", status, doc)
	}
	runQueue(t, b)
	waitMaterialized(t, b, ids)
	for _, id := range ids {
		if pg := storedGroup(t, b, id); pg.Spec.Slurm.Hold != (id == done[0]) {
			t.Errorf("job %d hold %v after the queue ran", id, pg.Spec.Slurm.Hold)
		}
	}
}

// BenchmarkSubmitQueueOnRig is the rate at which the SubmitQueue turns
// batched jobs into PodGroups (run with -benchtime Nx): N jobs are stored
// in batches of 64 first, then one pass of the queue is timed from its
// list to the last batch removed.
func BenchmarkSubmitQueueOnRig(b *testing.B) {
	_, admin := rigServer(b)
	ctx := context.Background()
	back, err := New(unthrottled(b), Options{Namespace: batchNamespace(b, admin), SubmitWindow: 20 * time.Millisecond, SubmitBatchJobs: 64})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = admin.c.DeleteAllOf(ctx, &v1alpha1.PodGroup{}, client.InNamespace(Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
	})
	jobs := make(chan struct{}, b.N)
	for range b.N {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range jobs {
				desc := &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1, Hold: true}
				if _, err := back.Submit(ctx, desc); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	q, err := NewSubmitQueue(unthrottled(b), back.opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	if _, err := q.drain(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "podgroups/s")
	if left := len(batches(b, back)); left != 0 {
		b.Errorf("%d batches left after a pass", left)
	}
}
