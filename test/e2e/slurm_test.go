package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

var slurmKey = []byte(strings.Repeat("k", 32))

// slurmSite runs what `sluice server` runs for Slurm jobs, in-process
// against the rig: the CRDs and the example site, the Sluice scheduler with
// the Slurm pod factory, the job lifecycle controller, and the REST API on
// real HTTP. Everything stops when the test ends.
func slurmSite(t *testing.T) *httptest.Server {
	t.Helper()
	rig := Rig(t)
	cfg := rig.RESTConfig()
	c := sluiceproc.InstallSite(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	factory, err := kube.NewPodFactory(cfg, kube.PodOptions{Users: kube.UserMap{Users: map[string]kube.UserIDs{"alice": {UID: 1001, GID: 1001}}},
		LaunchKeySeed: slurmKey}) // as the server: its token key derives launch keys
	if err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{}, cfg, prometheus.NewRegistry(), factory)
	if err != nil {
		t.Fatal(err)
	}
	life, err := kube.NewLifecycle(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := kube.New(cfg, kube.Options{Namespace: "default", IDBlock: 10, TokenKey: slurmKey}) // as the server: it seals environments the factory opens
	if err != nil {
		t.Fatal(err)
	}
	api, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: slurmKey, Operators: []string{"slurm"}}}, backend)
	if err != nil {
		t.Fatal(err)
	}
	grouper, err := podgrouper.NewController(cfg, []string{v1alpha1.DefaultSchedulerName})
	if err != nil {
		t.Fatal(err)
	}
	grouper.WithJobIDs(backend.JobIDs().Next)
	life.WithJobIDs(backend.JobIDs()) // array tasks take their ids as they are split off
	var wg sync.WaitGroup
	for name, run := range map[string]func(context.Context) error{"scheduler": sched.Run, "lifecycle": life.Run, "podgrouper": grouper.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	ts := httptest.NewServer(api)
	t.Cleanup(func() {
		ts.Close()
		// Jobs left over (a failed run) must not hold GPUs for later tests.
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(kube.Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
		cancel()
		wg.Wait()
	})
	return ts
}

// slurmCall sends one request as user, checks the answer against the
// official document of its version, and decodes it.
func slurmCall(t *testing.T, ts *httptest.Server, user, method, path, body string) (int, map[string]any) {
	t.Helper()
	tok, err := slurmapi.MintToken(slurmKey, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if path == submitPath {
		checkSubmitResponse(t, resp.StatusCode, raw)
	} else {
		openapitest.Check(t, method, path, resp.StatusCode, raw)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, doc
}

const submitPath = "/slurm/v0.0.45/job/submit"

// checkSubmitResponse validates a submission's answer against the literal
// job/submit operation: openapitest's path lookup walks a map and may take
// the templated job/{job_id} (whose update response has no job_id) for it.
func checkSubmitResponse(t *testing.T, status int, raw []byte) {
	t.Helper()
	d, err := openapitest.Doc("v0.0.45")
	if err != nil {
		t.Fatal(err)
	}
	resp := d.Paths.Value(submitPath).Post.Responses.Status(status)
	if resp == nil {
		resp = d.Paths.Value(submitPath).Post.Responses.Default()
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("submit answered %d %q", status, raw)
	}
	schema := resp.Value.Content.Get("application/json").Schema.Value
	if err := schema.VisitJSON(v, openapi3.MultiErrors(), openapi3.VisitAsResponse()); err != nil {
		t.Errorf("submit answer %d does not match the v0.0.45 spec: %v", status, err)
	}
}

// submit sends an sbatch script with its environment and extra job fields
// (JSON members) and returns the job id.
func submit(t *testing.T, ts *httptest.Server, script string, env []string, fields string) int {
	t.Helper()
	envJSON, err := json.Marshal(append([]string{"PATH=/bin:/usr/bin"}, env...))
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"script":%q,"job":{"environment":%s%s}}`, script, envJSON, fields)
	status, doc := slurmCall(t, ts, "alice", "POST", submitPath, body)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	return int(doc["job_id"].(float64))
}

// slurmJob is what squeue shows of one job.
type slurmJob struct {
	state, reason, exitStatus string
	returnCode                int
	nodes                     string
}

func showJob(t *testing.T, ts *httptest.Server, id int) slurmJob {
	t.Helper()
	status, doc := slurmCall(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), "")
	if status != http.StatusOK {
		t.Fatalf("show job %d: %d %v", id, status, doc)
	}
	j := doc["jobs"].([]any)[0].(map[string]any)
	exit := j["exit_code"].(map[string]any)
	rc := exit["return_code"].(map[string]any)
	out := slurmJob{state: j["job_state"].([]any)[0].(string), reason: fmt.Sprint(j["state_reason"]),
		exitStatus: exit["status"].([]any)[0].(string), nodes: fmt.Sprint(j["nodes"])}
	if set, _ := rc["set"].(bool); set {
		out.returnCode = int(rc["number"].(float64))
	}
	return out
}

func waitState(t *testing.T, ts *httptest.Server, id int, state string, timeout time.Duration) slurmJob {
	t.Helper()
	var last slurmJob
	WaitFor(t, fmt.Sprintf("job %d %s", id, state), timeout, func(context.Context) (bool, error) {
		last = showJob(t, ts, id)
		if last.state != state && (last.state == "COMPLETED" || last.state == "FAILED" || last.state == "TIMEOUT" || last.state == "CANCELLED") {
			t.Fatalf("job %d ended %s, want %s", id, last.state, state)
		}
		return last.state == state, fmt.Errorf("state %s", last.state)
	})
	return last
}

func jobPods(t *testing.T, ctx context.Context, id int) []corev1.Pod {
	t.Helper()
	pods, err := Rig(t).Client().CoreV1().Pods(kube.Namespace("nlp")).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", v1alpha1.JobIDLabel, id)})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func waitNoPods(t *testing.T, id int) {
	t.Helper()
	WaitFor(t, fmt.Sprintf("pods of job %d gone", id), time.Minute, func(ctx context.Context) (bool, error) {
		n := len(jobPods(t, ctx, id))
		return n == 0, fmt.Errorf("%d pods left", n)
	})
}

// TestSlurmJobLifecycle follows Slurm jobs from REST submission to their
// end: a 2-node, 8-GPU-per-node job is placed by Sluice, runs its two
// pods through kwok and completes; a failing job fails with its code; a job
// past its time limit times out; scancel cancels.
func TestSlurmJobLifecycle(t *testing.T) {
	ts := slurmSite(t)
	ctx := context.Background()

	big := submit(t, ts, "#!/bin/bash\n#SBATCH -J train -N 2 --ntasks-per-node=8 --gres=gpu:h100:8 -t 30\ntorchrun train.py\n",
		[]string{"SLUICE_SIM_DURATION=8s"}, "")
	running := waitState(t, ts, big, "RUNNING", 90*time.Second)
	// The scheduler marks the job RUNNING and creates its pods side by side.
	var pods []corev1.Pod
	WaitFor(t, fmt.Sprintf("job %d's pod on each of its 2 nodes", big), 30*time.Second, func(ctx context.Context) (bool, error) {
		pods = jobPods(t, ctx, big)
		return len(pods) == 2, fmt.Errorf("%d pods", len(pods))
	})
	// The RUNNING status and the pods are written side by side: the node list squeue
	// shows comes from the pods, once the server has seen them.
	WaitFor(t, fmt.Sprintf("job %d's node list", big), 30*time.Second, func(context.Context) (bool, error) {
		running = showJob(t, ts, big)
		return running.nodes != "" && running.nodes != "<nil>", fmt.Errorf("nodes %q", running.nodes)
	})
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		if p.Spec.SchedulerName != v1alpha1.DefaultSchedulerName || p.Spec.NodeName == "" || !strings.HasPrefix(p.Spec.NodeName, "h100") {
			t.Errorf("pod %s: scheduler %q node %q, want created bound by Sluice on an h100 node", p.Name, p.Spec.SchedulerName, p.Spec.NodeName)
		}
		if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 1001 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
			t.Errorf("pod %s does not run as alice's uid, non-root, with Strict supplemental groups (the rig's nodes support them): %+v", p.Name, sc)
		}
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		// Inside the job its nodes have the names squeue shows.
		if env["SLURM_JOB_ID"] != fmt.Sprint(big) || env["SLURM_NNODES"] != "2" || env["CUDA_VISIBLE_DEVICES"] != "0,1,2,3,4,5,6,7" ||
			env["SLURM_JOB_NODELIST"] != running.nodes || p.Spec.Hostname != p.Spec.NodeName {
			t.Errorf("pod %s on %s: hostname %s, environment %v; want the node list squeue shows, %s", p.Name, p.Spec.NodeName, p.Spec.Hostname, env, running.nodes)
		}
	}
	if len(nodes) != 2 {
		t.Errorf("the job's pods share nodes: %v", nodes)
	}
	if _, err := Rig(t).Client().CoreV1().Services(kube.Namespace("nlp")).Get(ctx, fmt.Sprintf("job-%d", big), metav1.GetOptions{}); err != nil {
		t.Errorf("the job's headless Service for its hostnames: %v", err)
	}
	done := waitState(t, ts, big, "COMPLETED", 90*time.Second)
	if done.returnCode != 0 || done.exitStatus != "SUCCESS" || done.nodes == "" {
		t.Errorf("completed job: %+v (while running: %+v)", done, running)
	}

	oneGPU := "#!/bin/bash\n#SBATCH -N 1 --gres=gpu:h100:1\npython step.py\n"
	failing := submit(t, ts, oneGPU, []string{"SLUICE_SIM_DURATION=2s", "SLUICE_SIM_EXIT_CODE=3"}, `,"name":"fails"`)
	slow := submit(t, ts, oneGPU, nil, `,"name":"slow","time_limit":{"set":true,"number":1}`)
	cancelled := submit(t, ts, oneGPU, nil, `,"name":"cancelled"`)

	waitState(t, ts, cancelled, "RUNNING", 90*time.Second)
	if status, doc := slurmCall(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.45/job/%d", cancelled), ""); status != http.StatusOK {
		t.Fatalf("scancel: %d %v", status, doc)
	}
	waitState(t, ts, cancelled, "CANCELLED", 30*time.Second)
	waitNoPods(t, cancelled)

	failed := waitState(t, ts, failing, "FAILED", 90*time.Second)
	if failed.returnCode != 3 || failed.exitStatus != "ERROR" {
		t.Errorf("failed job: %+v, want return code 3", failed)
	}

	waitState(t, ts, slow, "RUNNING", 90*time.Second)
	waitState(t, ts, slow, "TIMEOUT", 2*time.Minute)
	waitNoPods(t, slow)
}

// TestSlurmJobEvicted: a running job whose pod is evicted (as the
// scheduler's preemption or a drain does) is requeued with --requeue and
// runs again in a new pod (its PENDING REQUEUED spell lasts only until the
// scheduler places it again, too short to poll for while GPUs are free);
// without it the job ends PREEMPTED.
func TestSlurmJobEvicted(t *testing.T) {
	ts := slurmSite(t)
	ctx := context.Background()
	tests := []struct {
		name, directive string
		requeue         bool
	}{
		{"requeue", "#SBATCH --requeue\n", true},
		{"no-requeue", "#SBATCH --no-requeue\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := submit(t, ts, "#!/bin/bash\n#SBATCH -N 1 --gres=gpu:h100:1\n"+tc.directive+"python step.py\n", nil, `,"name":"`+tc.name+`"`)
			waitState(t, ts, id, "RUNNING", 90*time.Second)
			var pods []corev1.Pod
			WaitFor(t, fmt.Sprintf("job %d's pod", id), 30*time.Second, func(ctx context.Context) (bool, error) {
				pods = jobPods(t, ctx, id)
				return len(pods) == 1, fmt.Errorf("%d pods", len(pods))
			})
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Name, Namespace: pods[0].Namespace}}
			if err := Rig(t).Client().PolicyV1().Evictions(pods[0].Namespace).Evict(ctx, ev); err != nil {
				t.Fatal(err)
			}
			if !tc.requeue {
				waitState(t, ts, id, "PREEMPTED", time.Minute)
				waitNoPods(t, id)
				return
			}
			// The second run's pod is named for the requeue (kube.PodName), so a
			// new bound pod with the job RUNNING is the job run a second time.
			WaitFor(t, fmt.Sprintf("job %d running again", id), 90*time.Second, func(ctx context.Context) (bool, error) {
				again := jobPods(t, ctx, id)
				if len(again) != 1 || again[0].Name == pods[0].Name || again[0].Spec.NodeName == "" {
					return false, fmt.Errorf("pods %v (first run: %s)", podNames(again), pods[0].Name)
				}
				j := showJob(t, ts, id)
				return j.state == "RUNNING", fmt.Errorf("job %+v", j)
			})
		})
	}
}

func podNames(pods []corev1.Pod) []string {
	names := make([]string, len(pods))
	for i := range pods {
		names[i] = pods[i].Name
	}
	return names
}

// TestSlurmJobHoldAndDependency: a held job and one waiting on it with
// afterok get no pods while Sluice schedules around them and show Slurm's
// reasons; released, the first runs and completes, then the second.
func TestSlurmJobHoldAndDependency(t *testing.T) {
	ts := slurmSite(t)
	ctx := context.Background()
	script := "#!/bin/bash\n#SBATCH -N 1 --gres=gpu:h100:1\npython step.py\n"
	held := submit(t, ts, "#!/bin/bash\n#SBATCH -H -N 1 --gres=gpu:h100:1\npython step.py\n", []string{"SLUICE_SIM_DURATION=2s"}, "")
	after := submit(t, ts, script, []string{"SLUICE_SIM_DURATION=2s"}, fmt.Sprintf(`,"dependency":"afterok:%d"`, held))

	var waiting slurmJob
	WaitFor(t, fmt.Sprintf("job %d pending on its dependency", after), time.Minute, func(context.Context) (bool, error) {
		waiting = showJob(t, ts, after)
		return waiting.reason == "Dependency", fmt.Errorf("%+v", waiting)
	})
	if j := showJob(t, ts, held); j.state != "PENDING" || j.reason != "JobHeldUser" {
		t.Errorf("held job: %+v", j)
	}
	for _, id := range []int{held, after} {
		if n := len(jobPods(t, ctx, id)); n != 0 {
			t.Errorf("job %d is not eligible yet has %d pods", id, n)
		}
	}

	if status, doc := slurmCall(t, ts, "alice", "POST", fmt.Sprintf("/slurm/v0.0.45/job/%d", held), `{"hold":false}`); status != http.StatusOK {
		t.Fatalf("release: %d %v", status, doc)
	}
	waitState(t, ts, held, "COMPLETED", 90*time.Second)
	if j := waitState(t, ts, after, "COMPLETED", 90*time.Second); j.returnCode != 0 {
		t.Errorf("dependent job: %+v", j)
	}
}
