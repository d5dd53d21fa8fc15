package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// memoStep is one call on the memo at a time in seconds after the start: a store of
// workload, or a lookup of it that must hit (wantHit) or miss.
type memoStep struct {
	at       int
	workload string
	store    bool
	wantHit  bool
}

func TestOwnerMemoExpiryAndCap(t *testing.T) {
	tests := []struct {
		name  string
		max   int
		steps []memoStep
		want  []string // the workloads remembered after the last step
	}{
		{name: "a burst within the TTL is served", max: 4, steps: []memoStep{
			{at: 0, workload: "a", store: true}, {at: 1, workload: "a", wantHit: true}, {at: 29, workload: "a", wantHit: true},
		}, want: []string{"a"}},
		{name: "a later scale-up reads again", max: 4, steps: []memoStep{
			{at: 0, workload: "a", store: true}, {at: 30, workload: "a", wantHit: false},
		}, want: nil},
		{name: "another workload is not served", max: 4, steps: []memoStep{
			{at: 0, workload: "a", store: true}, {at: 1, workload: "b", wantHit: false},
		}, want: []string{"a"}},
		{name: "a full memo drops expired entries first", max: 2, steps: []memoStep{
			{at: 0, workload: "a", store: true}, {at: 20, workload: "b", store: true}, {at: 31, workload: "c", store: true},
			{at: 32, workload: "b", wantHit: true}, {at: 32, workload: "c", wantHit: true},
		}, want: []string{"b", "c"}},
		{name: "a full memo with nothing expired drops the oldest", max: 2, steps: []memoStep{
			{at: 0, workload: "a", store: true}, {at: 1, workload: "b", store: true}, {at: 2, workload: "c", store: true},
			{at: 3, workload: "a", wantHit: false},
		}, want: []string{"b", "c"}},
		{name: "storing a remembered workload again evicts nothing", max: 2, steps: []memoStep{
			{at: 0, workload: "a", store: true}, {at: 1, workload: "b", store: true}, {at: 25, workload: "a", store: true},
			{at: 26, workload: "b", wantHit: true}, {at: 40, workload: "a", wantHit: true},
		}, want: []string{"a", "b"}}, // b expired at 31 but is dropped only when looked up or evicted
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var now time.Time
			m := newOwnerMemo(nil)
			m.max, m.now = tt.max, func() time.Time { return now }
			reads := ownerReads{{name: "kept"}: &unstructured.Unstructured{}}
			for i, s := range tt.steps {
				now = start.Add(time.Duration(s.at) * time.Second)
				key := workloadKey{namespace: "ns", uid: types.UID(s.workload)}
				if s.store {
					m.store(key, reads)
					continue
				}
				if hit := m.lookup(key) != nil; hit != s.wantHit {
					t.Errorf("step %d: lookup of %s at %ds hit=%v, want %v", i, s.workload, s.at, hit, s.wantHit)
				}
			}
			var got []string
			for k := range m.entries {
				got = append(got, string(k.uid))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("remembered %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWorkloadOf(t *testing.T) {
	ref := func(uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: types.UID(uid), Controller: &controller}
	}
	tests := []struct {
		name  string
		refs  []metav1.OwnerReference
		want  types.UID
		keyed bool
	}{
		{name: "bare pod", refs: nil, keyed: false},
		{name: "the controller reference", refs: []metav1.OwnerReference{ref("other", false), ref("ctl", true)}, want: "ctl", keyed: true},
		{name: "no controller: the first reference", refs: []metav1.OwnerReference{ref("first", false), ref("second", false)}, want: "first", keyed: true},
		{name: "a reference without a UID", refs: []metav1.OwnerReference{ref("", true)}, keyed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: tt.refs}}
			key, keyed := workloadOf(pod)
			if keyed != tt.keyed || key.uid != tt.want || (keyed && key.namespace != "ns") {
				t.Errorf("workloadOf = %+v, %v; want uid %q, %v", key, keyed, tt.want, tt.keyed)
			}
		})
	}
}

// countingReader is the rig's client, counting the Gets it serves by kind and name.
type countingReader struct {
	client.Reader
	mu   sync.Mutex
	gets map[string]int
}

func newCountingReader(t testing.TB, c *cluster.Cluster) *countingReader {
	t.Helper()
	direct, err := client.New(c.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &countingReader{Reader: direct, gets: map[string]int{}}
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	r.gets[obj.GetObjectKind().GroupVersionKind().Kind+"/"+key.Name]++
	r.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) count(kind, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[kind+"/"+name]
}

// createJob creates a suspended Job, so the Job controller starts no pods of its own.
func createJob(t testing.TB, c *cluster.Cluster, namespace, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: batchv1.JobSpec{
			Suspend:     new(true),
			Parallelism: new(int32(4)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}},
		},
	}
	created, err := c.Client().BatchV1().Jobs(namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// jobPod is a pod the Job controller would create for job.
func jobPod(job *batchv1.Job) *corev1.Pod {
	pod := podSpec{}.pod(job.Namespace)
	pod.GenerateName = job.Name + "-"
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}}
	return pod
}

// rigNamespaces reads namespaces from the rig, as the server's informer would.
func rigNamespaces(c *cluster.Cluster) namespaceGetter {
	return func(ctx context.Context, name string) (*corev1.Namespace, error) {
		return c.Client().CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
}

// A Job's pods are named from one read of the Job, each with the group an uncached
// read names; a namesake Job created later is read again and names its own group.
func TestAdmissionReadsAJobOncePerWorkload(t *testing.T) {
	c := e2e.Rig(t)
	ctx := context.Background()
	ns := e2e.Namespace(t, c)
	counted := newCountingReader(t, c)
	adm := testAdmitter(t, rigNamespaces(c))
	adm.owners = newOwnerMemo(counted)
	srv := serveAdmitter(t, adm)
	const pods = 20

	var earlier string // the first Job's group
	for round, what := range []string{"first Job", "namesake Job with a new UID"} {
		t.Run(what, func(t *testing.T) {
			if round > 0 {
				deleteJob(t, c, ns, "train")
			}
			job := createJob(t, c, ns, "train")
			for i := range pods {
				pod := jobPod(job)
				if i%2 == 1 { // a pod's own labels must not leak into the next pod's group
					pod.Labels = map[string]string{"sluice.dev/queue": "vision"}
				}
				resp, got := admitPod(t, srv, pod)
				if !resp.Allowed {
					t.Fatalf("pod %d denied: %v", i, resp.Result)
				}
				today, err := podgrouper.AtAdmission(ctx, counted.Reader, pod, map[string]string{})
				if err != nil {
					t.Fatal(err)
				}
				group := got.Annotations["sluice.dev/pod-group"]
				if group != today.Name || got.Annotations["sluice.dev/pod-group-derived"] != "true" {
					t.Fatalf("pod %d named group %q (annotations %v), an uncached read names %q", i, group, got.Annotations, today.Name)
				}
				if want := "train-" + string(job.UID)[:8]; group != want {
					t.Fatalf("pod %d named group %q, want the Job's %q", i, group, want)
				}
				if group == earlier {
					t.Fatalf("pod %d of the new Job joined the deleted Job's group %q", i, group)
				}
				if i == pods-1 {
					earlier = group
				}
			}
			if got := counted.count("Job", "train"); got != round+1 {
				t.Errorf("the Job was read %d times in all after %d pods of %d Jobs, want once per Job", got, pods, round+1)
			}
		})
	}
}

// Concurrent admissions of one Job's pods (the API server calls the webhook in
// parallel) all get the Job's group, and at most each caller's first pod reads the Job.
func TestConcurrentAdmissionsShareTheJobRead(t *testing.T) {
	c := e2e.Rig(t)
	ns := e2e.Namespace(t, c)
	counted := newCountingReader(t, c)
	adm := testAdmitter(t, rigNamespaces(c))
	adm.owners = newOwnerMemo(counted)
	job := createJob(t, c, ns, "burst")
	body := reviewFor(t, jobPod(job), admissionv1.Create)
	const callers, podsEach = 8, 10
	groups := make(chan string, callers*podsEach)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range podsEach {
				req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				adm.ServeHTTP(rec, req)
				var review admissionv1.AdmissionReview
				if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
					groups <- fmt.Sprintf("status %d: %s", rec.Code, rec.Body)
					continue
				}
				groups <- string(review.Response.Patch)
			}
		})
	}
	wg.Wait()
	close(groups)
	want := `"sluice.dev/pod-group":"burst-` + string(job.UID)[:8] + `"`
	for patch := range groups {
		if !strings.Contains(patch, want) {
			t.Errorf("a pod was not named the Job's group (%s): %s", want, patch)
		}
	}
	if got := counted.count("Job", "burst"); got < 1 || got > callers {
		t.Errorf("the Job was read %d times for %d pods from %d callers, want 1 to %d", got, callers*podsEach, callers, callers)
	}
}

// deleteJob deletes a Job and waits until it is gone, so its name can be reused.
func deleteJob(t testing.TB, c *cluster.Cluster, namespace, name string) {
	t.Helper()
	jobs := c.Client().BatchV1().Jobs(namespace)
	background := metav1.DeletePropagationBackground
	if err := jobs.Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "Job "+name+" gone", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
