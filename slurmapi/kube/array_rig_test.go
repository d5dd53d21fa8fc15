package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// runSite starts what `sluice server` runs beside the REST API: the Sluice
// scheduler with the Slurm pod factory and the job lifecycle controller.
// They stop, and the jobs of account nlp are removed, when the test ends.
func runSite(t *testing.T, b *Backend) {
	t.Helper()
	cfg := e2e.Rig(t).RESTConfig()
	factory, err := NewPodFactory(cfg, PodOptions{LaunchKeySeed: rigKey}) // opens what the backend sealed
	if err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{}, cfg, prometheus.NewRegistry(), factory)
	if err != nil {
		t.Fatal(err)
	}
	life, err := NewLifecycle(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	life.WithJobIDs(b.JobIDs()) // as the server: tasks take ids from the submissions' counter
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for name, run := range map[string]func(context.Context) error{"scheduler": sched.Run, "lifecycle": life.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = b.c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
	})
}

// arrayJobs reads job/{id} of an array as the REST API answers it.
func arrayJobs(t *testing.T, ts *httptest.Server, id uint32) []map[string]any {
	t.Helper()
	status, doc := call(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), "")
	if status != http.StatusOK {
		t.Fatalf("job %d: %d %v", id, status, doc)
	}
	var out []map[string]any
	for _, j := range doc["jobs"].([]any) {
		out = append(out, j.(map[string]any))
	}
	return out
}

// number reads a no-value struct's number.
func number(v any) int {
	n, _ := v.(map[string]any)["number"].(float64)
	return int(n)
}

// TestArrayHonoursMaxOnRig: sbatch --array=0-3%2 of 1-GPU jobs is one
// PodGroup until the lifecycle splits tasks off; no more than 2 tasks ever
// run at once; all 4 end COMPLETED with their own job ids, array_job_id and
// array_task_id, and Slurm's SLURM_ARRAY_* environment.
func TestArrayHonoursMaxOnRig(t *testing.T) {
	ts, b := rigServer(t)
	ctx := context.Background()
	script := `{"script":"#!/bin/bash\n#SBATCH -p h100 --gres=gpu:1 --array=0-3%2\necho $SLURM_ARRAY_TASK_ID\n","job":{"account":"nlp","environment":["PATH=/bin","SLUICE_SIM_DURATION=2s"]}}`
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", script)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	id := uint32(doc["job_id"].(float64))

	// Before the lifecycle runs: one object, shown as ID_[0-3].
	var groups v1alpha1.PodGroupList
	if err := b.c.List(ctx, &groups, client.MatchingLabels{ArrayJobLabel: strconv.Itoa(int(id))}); err != nil {
		t.Fatal(err)
	}
	if len(groups.Items) != 1 || len(groups.Items[0].Spec.Members) != 0 {
		t.Fatalf("a pending array is %d PodGroups (members %v), want one record with no members", len(groups.Items), groups.Items)
	}
	jobs := arrayJobs(t, ts, id)
	if len(jobs) != 1 || jobs[0]["array_task_string"] != "0-3" || number(jobs[0]["array_job_id"]) != int(id) ||
		number(jobs[0]["array_max_tasks"]) != 2 || jobs[0]["tres_req_str"] != "cpu=1,node=1,billing=1,gres/gpu=1" {
		t.Fatalf("the pending array as squeue sees it: %v", jobs)
	}

	runSite(t, b)
	envSeen := map[string]map[string]string{} // task id -> SLURM_ARRAY_* of its pod
	most := 0
	e2e.WaitFor(t, "all 4 tasks COMPLETED", 120*time.Second, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := b.c.List(ctx, &pods, client.InNamespace(Namespace("nlp")), client.MatchingLabels{SlurmPodLabel: "true"}); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			env := map[string]string{}
			for _, e := range p.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			if env["SLURM_ARRAY_JOB_ID"] != fmt.Sprint(id) {
				continue // another test's job
			}
			envSeen[env["SLURM_ARRAY_TASK_ID"]] = env
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		most = max(most, running)
		if running > 2 {
			t.Errorf("%d tasks of array 0-3%%2 run at once", running)
		}
		jobs := arrayJobs(t, ts, id)
		done := 0
		for _, j := range jobs {
			if j["job_state"].([]any)[0] == "COMPLETED" {
				done++
			}
		}
		return done == 4 && len(jobs) == 4, fmt.Errorf("%d of %d records COMPLETED, %d running", done, len(jobs), running)
	})
	if most == 0 {
		t.Error("no task was ever seen running")
	}

	// Tasks 0-2 took ids when they were split off, in index order, so after
	// the array's; the last task is the array's own record, as in Slurm.
	var tasks []int
	taskIDs := map[int]int{}
	for _, j := range arrayJobs(t, ts, id) {
		task := number(j["array_task_id"])
		tasks = append(tasks, task)
		taskIDs[task] = int(j["job_id"].(float64))
		if number(j["array_job_id"]) != int(id) || j["exit_code"] == nil {
			t.Errorf("task %d: array_job_id %v exit_code %v, want %d and an exit code", task, j["array_job_id"], j["exit_code"], id)
		}
	}
	if taskIDs[3] != int(id) || taskIDs[0] <= int(id) || taskIDs[1] <= taskIDs[0] || taskIDs[2] <= taskIDs[1] {
		t.Errorf("task ids %v: want task 3 under the array's id %d and tasks 0-2 under increasing ids above it", taskIDs, id)
	}
	slices.Sort(tasks)
	if !slices.Equal(tasks, []int{0, 1, 2, 3}) {
		t.Errorf("array tasks %v, want 0-3", tasks)
	}
	for task, env := range envSeen {
		want := map[string]string{"SLURM_ARRAY_JOB_ID": fmt.Sprint(id), "SLURM_ARRAY_TASK_COUNT": "4",
			"SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_STEP": "1"}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("task %s: %s=%q, want %q", task, k, env[k], v)
			}
		}
	}
	if len(envSeen) == 0 {
		t.Error("no task's pod was seen")
	}
}

// TestArrayCancelOnRig: scancel of one task (job/ID_TASK or jobs/) ends
// only it; scancel of the array id ends the record and every task, split
// off or not.
func TestArrayCancelOnRig(t *testing.T) {
	ts, b := rigServer(t)
	script := `{"script":"#!/bin/bash\n#SBATCH -p h100 --gres=gpu:1 --array=0-5%1\nsleep 600\n","job":{"account":"nlp","environment":["PATH=/bin"]}}`
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", script)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	id := uint32(doc["job_id"].(float64))
	runSite(t, b)
	e2e.WaitFor(t, "task 0 RUNNING", 60*time.Second, func(ctx context.Context) (bool, error) {
		status, doc := call(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d_0", id), "")
		if status != http.StatusOK {
			return false, fmt.Errorf("%d %v", status, doc)
		}
		j := doc["jobs"].([]any)[0].(map[string]any)
		return j["job_state"].([]any)[0] == "RUNNING", fmt.Errorf("task 0 is %v", j["job_state"])
	})
	jobs := arrayJobs(t, ts, id)
	if len(jobs) != 2 {
		t.Fatalf("with %%1 and task 0 running, job %d shows %d records, want task 0 and the record", id, len(jobs))
	}
	for _, j := range jobs {
		if j["job_state"].([]any)[0] == "PENDING" && (j["state_reason"] != "JobArrayTaskLimit" || j["array_task_string"] != "1-5") {
			t.Errorf("the record waits as %v with tasks %v, want JobArrayTaskLimit and 1-5", j["state_reason"], j["array_task_string"])
		}
	}
	// scancel ID_4 drops a task not split off yet.
	if status, doc := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.44/job/%d_4", id), ""); status != http.StatusOK {
		t.Fatalf("scancel %d_4: %d %v", id, status, doc)
	}
	if status, _ := call(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d_4", id), ""); status != http.StatusNotFound {
		t.Errorf("task 4 after its scancel: %d, want 404", status)
	}
	// DELETE jobs/ takes ARRAYID_TASK too.
	if status, doc := call(t, ts, "alice", "DELETE", "/slurm/v0.0.44/jobs", fmt.Sprintf(`{"jobs":["%d_5"]}`, id)); status != http.StatusOK {
		t.Fatalf("scancel %d_5: %d %v", id, status, doc)
	}
	for _, j := range arrayJobs(t, ts, id) {
		if j["job_state"].([]any)[0] == "PENDING" && j["array_task_string"] != "1-3" {
			t.Errorf("after scancel of tasks 4 and 5 the record still holds %v, want 1-3", j["array_task_string"])
		}
	}
	if status, doc := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), ""); status != http.StatusOK {
		t.Fatalf("scancel %d: %d %v", id, status, doc)
	}
	for _, j := range arrayJobs(t, ts, id) {
		if s := j["job_state"].([]any)[0]; s != "CANCELLED" {
			t.Errorf("after scancel of the array, job %v (task %v) is %v", j["job_id"], j["array_task_id"], s)
		}
	}
}

// TestArrayWaitsForDependencyOnRig runs the lifecycle alone: an array
// with afterok on a pending job stays one record (reason Dependency) and
// has its tasks split off once that job succeeds.
func TestArrayWaitsForDependencyOnRig(t *testing.T) {
	_, b := rigServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	life, err := NewLifecycle(e2e.Rig(t).RESTConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	life.WithJobIDs(b.JobIDs())
	done := make(chan error, 1)
	go func() { done <- life.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("lifecycle: %v", err)
		}
		_ = b.c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
	})
	desc := slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1}
	first, err := b.Submit(ctx, &desc)
	if err != nil {
		t.Fatal(err)
	}
	array := desc
	array.Array, array.Dependency = "0-2", fmt.Sprintf("afterok:%d", first.JobID)
	res, err := b.Submit(ctx, &array)
	if err != nil {
		t.Fatal(err)
	}
	groups := func(ctx context.Context) ([]v1alpha1.PodGroup, error) {
		var list v1alpha1.PodGroupList
		err := b.c.List(ctx, &list, client.MatchingLabels{ArrayJobLabel: fmt.Sprint(res.JobID)})
		return list.Items, err
	}
	e2e.WaitFor(t, "the array's record waits on its dependency", 30*time.Second, func(ctx context.Context) (bool, error) {
		j, err := b.Job(ctx, res.JobID)
		return err == nil && j.Reason == "Dependency", fmt.Errorf("reason %q (%v)", j.Reason, err)
	})
	if pgs, err := groups(ctx); err != nil || len(pgs) != 1 {
		t.Fatalf("an array waiting on a dependency is %d PodGroups (%v), want its record alone", len(pgs), err)
	}
	var pg v1alpha1.PodGroup
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: Namespace("nlp"), Name: PodGroupName(first.JobID)}, &pg); err != nil {
		t.Fatal(err)
	}
	pg.Status.Phase = v1alpha1.PodGroupSucceeded
	if err := b.c.Status().Update(ctx, &pg); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "tasks split off once the dependency is met", 30*time.Second, func(ctx context.Context) (bool, error) {
		pgs, err := groups(ctx)
		return err == nil && len(pgs) > 1, fmt.Errorf("%d PodGroups (%v)", len(pgs), err)
	})
}
