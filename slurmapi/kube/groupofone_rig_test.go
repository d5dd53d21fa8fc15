package kube

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestGroupOfOneOnRig: a bare pod the webhook numbered is one job in squeue from
// admission to scancel, whether or not the scheduler wrote its PodGroup: listed once
// with its id and its pod's state, found by id, refused changes as any manifest job is,
// and scancel deletes the pod (and with it the PodGroup).
func TestGroupOfOneOnRig(t *testing.T) {
	ts, b := rigServer(t)
	ctx := context.Background()
	ns := groupOfOneNamespace(t, b)
	node := firstNode(t, b)
	logs, err := NewJobLogs(e2e.Rig(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		write bool // the scheduler writes its PodGroup (it waited, or is evicted)
	}{
		{"no PodGroup", false},
		{"PodGroup written", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, err := b.JobIDs().Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pod := admittedBarePod(ns.Name, id)
			createPod(t, b, pod)
			path := fmt.Sprintf("/slurm/v0.0.44/job/%d", id)
			t.Cleanup(func() { _ = b.c.Delete(ctx, pod) })

			pending := listedOnce(t, ts, id)
			if pending["job_state"].([]any)[0] != "PENDING" || pending["account"] != "nlp" || pending["name"] != ns.Name+"/pod-"+pod.Name {
				t.Errorf("unbound: %v %v %v, want PENDING nlp %s/pod-%s", pending["job_state"], pending["account"], pending["name"], ns.Name, pod.Name)
			}
			bind(t, b, pod, node)
			running := listedOnce(t, ts, id)
			if running["job_state"].([]any)[0] != "RUNNING" || running["nodes"] != node {
				t.Errorf("bound to %s: %v on %v", node, running["job_state"], running["nodes"])
			}
			if tt.write {
				if err := b.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
					t.Fatal(err)
				}
				if err := b.c.Create(ctx, jobstate.ImpliedPodGroup(pod)); err != nil {
					t.Fatal(err)
				}
				written := listedOnce(t, ts, id)
				if written["job_state"].([]any)[0] != "RUNNING" || fmt.Sprint(written["submit_time"]) != fmt.Sprint(running["submit_time"]) {
					t.Errorf("after its PodGroup was written: %v submitted %v, want RUNNING submitted %v", written["job_state"], written["submit_time"], running["submit_time"])
				}
			}

			status, doc := call(t, ts, "slurm", "GET", path, "")
			if status != http.StatusOK || len(doc["jobs"].([]any)) != 1 {
				t.Fatalf("GET %s: %d %v", path, status, doc)
			}
			if j := doc["jobs"].([]any)[0].(map[string]any); j["job_id"] != float64(id) || j["job_state"].([]any)[0] != "RUNNING" {
				t.Errorf("GET %s: job %v %v, want %d RUNNING", path, j["job_id"], j["job_state"], id)
			}
			job, err := b.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := logs.taskPod(ctx, &job, 0); err != nil || p.Name != pod.Name {
				t.Errorf("its log is read from pod %v (%v), want %s", podName(p), err, pod.Name)
			}
			if status, doc := call(t, ts, "slurm", "POST", path, `{"hold":true}`); status != http.StatusBadRequest {
				t.Errorf("hold: %d %v, want 400 (change it with kubectl)", status, doc)
			}
			group := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: pod.Annotations[v1alpha1.PodGroupAnnotation]}}
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(group), group); tt.write != (err == nil) {
				t.Errorf("after the refused hold, its PodGroup read: %v; want one only if written", err)
			}

			if status, doc := call(t, ts, "slurm", "DELETE", path, ""); status != http.StatusOK {
				t.Fatalf("scancel: %d %v", status, doc)
			}
			waitGone(t, b, pod)
			if tt.write {
				waitGone(t, b, group)
			}
			if status, doc := call(t, ts, "slurm", "GET", path, ""); status != http.StatusNotFound {
				t.Errorf("GET %s after scancel: %d %v, want 404", path, status, doc)
			}
		})
	}
}

// TestEndedGroupOfOneOnRig: a group of one whose pod ended is listed COMPLETED or
// FAILED from its pod, and scancel refuses it (409), keeping the pod that records how
// it ended.
func TestEndedGroupOfOneOnRig(t *testing.T) {
	ts, b := rigServer(t)
	ctx := context.Background()
	ns := groupOfOneNamespace(t, b)
	node := firstNode(t, b)
	for _, tt := range []struct {
		exitCode int
		state    string
	}{
		{0, "COMPLETED"},
		{3, "FAILED"},
	} {
		t.Run(tt.state, func(t *testing.T) {
			id, err := b.JobIDs().Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pod := admittedBarePod(ns.Name, id)
			maps.Copy(pod.Annotations, cluster.SimulatedRun(100*time.Millisecond, tt.exitCode))
			createPod(t, b, pod)
			t.Cleanup(func() { _ = b.c.Delete(ctx, pod) })
			bind(t, b, pod, node)
			deadline := time.Now().Add(30 * time.Second)
			for listedOnce(t, ts, id)["job_state"].([]any)[0] != tt.state {
				if time.Now().After(deadline) {
					t.Fatalf("job %d not %s after 30s", id, tt.state)
				}
				time.Sleep(200 * time.Millisecond)
			}
			path := fmt.Sprintf("/slurm/v0.0.44/job/%d", id)
			if status, doc := call(t, ts, "slurm", "DELETE", path, ""); status != http.StatusConflict {
				t.Errorf("scancel of an ended job: %d %v, want 409", status, doc)
			}
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.DeletionTimestamp != nil {
				t.Errorf("the ended job's pod after the refused scancel: %v, deleting %v", err, pod.DeletionTimestamp)
			}
		})
	}
}

// TestGroupsOfOneCostOneListOnRig: squeue reads the groups of one with one List of
// numbered pods however many there are, never a read per pod.
func TestGroupsOfOneCostOneListOnRig(t *testing.T) {
	var mu sync.Mutex
	var podReads []string
	cfg := rest.CopyConfig(e2e.Rig(t).RESTConfig())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "/pods") {
				mu.Lock()
				podReads = append(podReads, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	ts, b := rigServerWith(t, cfg, Options{Namespace: "default", IDBlock: 10})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "groups-of-one"}}
	if err := b.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var ids []uint32
	for range 5 {
		id, err := b.JobIDs().Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pod := admittedBarePod(ns.Name, id)
		createPod(t, b, pod)
		t.Cleanup(func() { _ = b.c.Delete(ctx, pod) })
		ids = append(ids, id)
	}
	mu.Lock()
	podReads = nil
	mu.Unlock()
	for _, id := range ids {
		listedOnce(t, ts, id)
	}
	mu.Lock()
	defer mu.Unlock()
	numbered := 0
	for _, r := range podReads {
		switch {
		case strings.HasPrefix(r, "GET /api/v1/pods?") && strings.Contains(r, "sluice.dev%2Fjob-id"):
			numbered++
		case !strings.HasSuffix(strings.SplitN(r, "?", 2)[0], "/pods"):
			t.Errorf("a read of one pod: %s", r)
		}
	}
	if numbered != len(ids) { // listedOnce lists the jobs once per id
		t.Errorf("%d GET jobs listed numbered pods %d times, want once each: %v", len(ids), numbered, podReads)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// admittedBarePod is a bare pod as the webhook admits it: its PodGroup named and
// marked derived, numbered id, in queue nlp, for Sluice to schedule.
func admittedBarePod(namespace string, id uint32) *corev1.Pod {
	name := "solo-" + strconv.FormatUint(uint64(id), 10)
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels:      map[string]string{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(id), 10), v1alpha1.QueueLabel: "nlp"},
			Annotations: map[string]string{v1alpha1.PodGroupAnnotation: "pod-" + name, v1alpha1.PodGroupDerivedAnnotation: "true"},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "sluice", AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		},
	}
}

// bind binds pod to node through the binding subresource, as the scheduler does.
func bind(t *testing.T, b *Backend, pod *corev1.Pod, node string) {
	t.Helper()
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := b.c.SubResource("binding").Create(context.Background(), pod, binding); err != nil {
		t.Fatalf("bind %s to %s: %v", pod.Name, node, err)
	}
}

// listedOnce is job id as GET jobs lists it, failing unless it is there exactly once.
func listedOnce(t *testing.T, ts *httptest.Server, id uint32) map[string]any {
	t.Helper()
	status, doc := call(t, ts, "slurm", "GET", "/slurm/v0.0.44/jobs", "")
	if status != http.StatusOK {
		t.Fatalf("GET jobs: %d %v", status, doc)
	}
	var found []map[string]any
	for _, j := range doc["jobs"].([]any) {
		if j := j.(map[string]any); j["job_id"] == float64(id) {
			found = append(found, j)
		}
	}
	if len(found) != 1 {
		t.Fatalf("job %d listed %d times: %v", id, len(found), found)
	}
	return found[0]
}

// waitGone waits for obj to leave the API server (kwok ends a deleted pod's
// containers, the garbage collector removes what a deleted pod owned).
func waitGone(t *testing.T, b *Backend, obj client.Object) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := b.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			return
		case time.Now().After(deadline):
			t.Fatalf("%T %s/%s still there after a minute (%v)", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// groupOfOneNamespace makes sure the namespace the group-of-one tests use exists.
func groupOfOneNamespace(t *testing.T, b *Backend) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "group-of-one"}}
	if err := b.c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return ns
}
