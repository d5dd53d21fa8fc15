package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// logServer serves JobLogPath on the rig as the binary mounts it.
func logServer(t *testing.T, b *Backend) (*httptest.Server, *JobLogs) {
	t.Helper()
	logs, err := NewJobLogs(e2e.Rig(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: rigKey, Operators: []string{"slurm"}}}, b)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter()
	r.Handle(slurmapi.JobLogPath, srv.JobLogHandler(logs))
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return ts, logs
}

// getLog reads a job's log as user: the status and the body, or the
// first errors[] description when the answer is an error.
func getLog(t *testing.T, ts *httptest.Server, user, path string) (int, string) {
	t.Helper()
	tok, err := slurmapi.MintToken(rigKey, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, string(body)
	}
	var doc struct {
		Errors []struct {
			Description string `json:"description"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) == 0 {
		t.Fatalf("GET %s as %s: %d without an errors[] entry: %q", path, user, resp.StatusCode, body)
	}
	return resp.StatusCode, doc.Errors[0].Description
}

func TestJobLogOnRig(t *testing.T) {
	ts, b := rigServer(t)
	logTS, logs := logServer(t, b)
	ctx := context.Background()
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", gpuJob)
	if status != 200 {
		t.Fatalf("submit: %d %v", status, doc)
	}
	id := uint32(doc["job_id"].(float64))
	logPath := func(query string) string { return fmt.Sprintf("/sluice/v1/job/%d/log%s", id, query) }

	tests := []struct {
		name, user, path string
		status           int
		says             string
	}{
		{"pending job", "alice", logPath(""), http.StatusConflict, "has not started"},
		{"someone else's job", "bob", logPath(""), http.StatusForbidden, "may not access"},
		{"operator, pending job", "slurm", logPath(""), http.StatusConflict, "has not started"},
		{"unknown job", "alice", "/sluice/v1/job/99999999/log", http.StatusNotFound, "does not exist"},
		{"not a job id", "alice", "/sluice/v1/job/x/log", http.StatusBadRequest, "not a job id"},
		{"bad stream", "alice", logPath("?stream=both"), http.StatusBadRequest, "stream must be"},
		{"bad node", "alice", logPath("?node=-1"), http.StatusBadRequest, "node index"},
		{"node beyond the job", "alice", logPath("?node=2"), http.StatusBadRequest, "runs on 2 node(s)"},
	}
	for _, tt := range tests {
		status, says := getLog(t, logTS, tt.user, tt.path)
		if status != tt.status || !strings.Contains(says, tt.says) {
			t.Errorf("%s: %d %q, want %d mentioning %q", tt.name, status, says, tt.status, tt.says)
		}
	}
	if status, _ := getLog(t, logTS, "nobody", logPath("")); status != http.StatusForbidden {
		t.Errorf("a user of no account read alice's log: %d", status)
	}

	// The job starts (the pods the scheduler would create, bound to a
	// node), then is requeued and runs again: its log is its latest run's
	// batch host.
	var pg v1alpha1.PodGroup
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: Namespace("nlp"), Name: PodGroupName(id)}, &pg); err != nil {
		t.Fatal(err)
	}
	node := firstNode(t, b)
	startRun(t, b, &pg, node)
	pg.Status.Requeues = 1
	if err := b.c.Status().Update(ctx, &pg); err != nil {
		t.Fatal(err)
	}
	startRun(t, b, &pg, node)
	job, err := b.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for index, want := range map[int]string{0: PodName(&pg, 0), 1: PodName(&pg, 1)} {
		pod, err := logs.taskPod(ctx, &job, index)
		if err != nil || pod.Name != want {
			t.Errorf("node %d: pod %v (%v), want %s", index, podName(pod), err, want)
		}
	}
	// The rig's kwok plays the nodes' kubelets and serves every simulated
	// container the rig's log file (test/cluster.simulatedLog).
	status, says := getLog(t, logTS, "alice", logPath(""))
	if status != http.StatusOK || !strings.Contains(says, "simulated (kwok) node") {
		t.Errorf("log of the running job: %d %q, want the rig's simulated log", status, says)
	}
	// Only API servers with split streams can give stderr alone.
	status, says = getLog(t, logTS, "alice", logPath("?stream=stderr"))
	t.Logf("its stderr on this rig: %d %q", status, says)
	if status != http.StatusOK && !(status == http.StatusNotImplemented && strings.Contains(says, "without --error")) &&
		!strings.Contains(says, PodName(&pg, 0)) {
		t.Errorf("stderr of the running job: %d %q", status, says)
	}
	if status, _ := getLog(t, logTS, "bob", logPath("")); status != http.StatusForbidden {
		t.Errorf("bob read alice's running job's log: %d", status)
	}
}

func podName(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return p.Name
}

func firstNode(t *testing.T, b *Backend) string {
	t.Helper()
	var nodes corev1.NodeList
	if err := b.c.List(context.Background(), &nodes); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("rig nodes: %v (%d)", err, len(nodes.Items))
	}
	return nodes.Items[0].Name
}

// startRun creates the pods of the job's current run as the scheduler
// does: built by BuildPods, bound to node.
func startRun(t *testing.T, b *Backend, pg *v1alpha1.PodGroup, node string) {
	t.Helper()
	binds := make([]bridge.Bind, pg.Spec.MinMember)
	for i := range binds {
		binds[i].Node = node
	}
	pods, err := BuildPods(pg, binds, RunAs{LauncherImage: testLauncherImage, Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		p.Spec.NodeName = node
		createPod(t, b, p)
	}
}

// createPod creates p, waiting for its namespace's default ServiceAccount
// (made by the controller manager shortly after the namespace).
func createPod(t *testing.T, b *Backend, p *corev1.Pod) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := b.c.Create(context.Background(), p)
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "serviceaccount") {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
