package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
	"github.com/sluicehq/sluice/test/e2e"
)

var (
	siteOnce sync.Once
	siteErr  error
	rigKey   = bytes.Repeat([]byte("r"), 32)
)

// rigServer serves the REST API over real HTTP on a backend connected to
// the rig, with the CRDs installed and the seed site applied.
func rigServer(t testing.TB) (*httptest.Server, *Backend) {
	t.Helper()
	return rigServerWith(t, e2e.Rig(t).RESTConfig(), Options{Namespace: "default", IDBlock: 10})
}

// rigServerWith is rigServer with a backend of opts on cfg.
func rigServerWith(t testing.TB, cfg *rest.Config, opts Options) (*httptest.Server, *Backend) {
	t.Helper()
	rig := e2e.Rig(t)
	if opts.TokenKey == nil {
		opts.TokenKey = rigKey // as the server: its token key seals environments, the factories' seed opens them
	}
	b, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	siteOnce.Do(func() {
		ctx := context.Background()
		if siteErr = crds.Install(ctx, rig.RESTConfig()); siteErr == nil {
			siteErr = applySite(ctx, b.c)
		}
	})
	if siteErr != nil {
		t.Fatal(siteErr)
	}
	srv, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: rigKey, Operators: []string{"slurm"}}}, b)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, b
}

func applySite(ctx context.Context, c client.Client) error {
	objs, err := examples.Objects(examples.Site)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apply %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// call sends one request as user and validates the answer against the
// official document of its version.
func call(t testing.TB, ts *httptest.Server, user, method, path, body string) (int, map[string]any) {
	t.Helper()
	tok, err := slurmapi.MintToken(rigKey, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	openapitest.Check(t, method, path, resp.StatusCode, b)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s %s: %q", method, path, b)
	}
	return resp.StatusCode, doc
}

const gpuJob = `{"script":"#!/bin/bash\n#SBATCH -J train -N 2 --ntasks-per-node=8 --gres=gpu:h100:8 -t 30\nsrun python train.py\n","job":{"environment":["PATH=/bin"]}}`

func TestSubmitListCancelOnRig(t *testing.T) {
	ts, b := rigServer(t)
	ctx := context.Background()
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", gpuJob)
	if status != 200 {
		t.Fatalf("submit: %d %v", status, doc)
	}
	id := uint32(doc["job_id"].(float64))

	var pg v1alpha1.PodGroup
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: PodGroupName(id)}, &pg); err != nil {
		t.Fatalf("PodGroup of job %d: %v", id, err)
	}
	if pg.Spec.MinMember != 2 || pg.Spec.Queue != "nlp" || pg.Spec.Slurm.User != "alice" {
		t.Errorf("PodGroup spec %+v", pg.Spec)
	}

	_, doc = call(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), "")
	job := doc["jobs"].([]any)[0].(map[string]any)
	if job["job_state"].([]any)[0] != "PENDING" || job["user_name"] != "alice" || job["tres_per_node"] != "gres/gpu:h100:8" || job["tres_req_str"] != "cpu=16,node=2,billing=16,gres/gpu=16,gres/gpu:h100=16" {
		t.Errorf("job as alice sees it: %v", job)
	}
	// Everyone sees the queue (no PrivateData, Slurm's default); only alice changes her job.
	if status, _ := call(t, ts, "bob", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), ""); status != http.StatusOK {
		t.Errorf("bob reading alice's job: %d, want 200", status)
	}
	if status, _ := call(t, ts, "bob", "DELETE", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), ""); status != http.StatusForbidden {
		t.Errorf("bob cancelling alice's job: %d, want 403", status)
	}

	if status, doc := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.45/job/%d", id), ""); status != 200 {
		t.Fatalf("cancel: %d %v", status, doc)
	}
	_, doc = call(t, ts, "slurm", "GET", fmt.Sprintf("/slurm/v0.0.45/job/%d", id), "")
	if s := doc["jobs"].([]any)[0].(map[string]any)["job_state"].([]any)[0]; s != "CANCELLED" {
		t.Errorf("after scancel the job is %v", s)
	}
	if status, _ := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.45/job/%d", id), ""); status != http.StatusConflict {
		t.Errorf("cancelling twice: %d, want 409", status)
	}
}

func TestBadSubmissionCreatesNothingOnRig(t *testing.T) {
	ts, b := rigServer(t)
	before := countGroups(t, b)
	for _, body := range []string{
		`{"script":"#!/bin/bash\n","job":{"partition":"v100"}}`,
		`{"script":"#!/bin/bash\n","job":{"tres_per_node":"gres/gpu:a100:1"}}`,
		`{"script":"echo no shebang","job":{}}`,
		`{"job":`,
	} {
		if status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.43/job/submit", body); status != 400 {
			t.Errorf("%s: %d %v", body, status, doc)
		}
	}
	if after := countGroups(t, b); after != before {
		t.Errorf("bad submissions changed the PodGroup count from %d to %d", before, after)
	}
}

func countGroups(t testing.TB, b *Backend) int {
	pgs, err := b.podGroups(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(pgs)
}

// TestJobIDsSurviveRestart: a new server (a new JobIDs) never hands out an
// id that an earlier one acknowledged, and concurrent allocators never
// collide.
func TestJobIDsSurviveRestart(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	seen := map[uint32]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for server := 0; server < 3; server++ {
		ids := NewJobIDs(b.c, "default", "test-ids", 7)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				id, err := ids.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var highest uint32
	for id := range seen {
		highest = max(highest, id)
	}
	restarted, err := NewJobIDs(b.c, "default", "test-ids", 7).Next(ctx)
	if err != nil || restarted <= highest {
		t.Errorf("after restart got %d (%v), want above %d", restarted, err, highest)
	}
}

// BenchmarkSubmitOnRig16 is the REST submission rate against the rig's API
// server with 16 concurrent clients, one PodGroup create per submission;
// it reports p50/p99 latency.
func BenchmarkSubmitOnRig16(b *testing.B) {
	ts, _ := rigServerWith(b, unthrottled(b), Options{Namespace: "default", IDBlock: 10})
	benchSubmit(b, ts)
}

// BenchmarkSubmitOnRig16Batched is BenchmarkSubmitOnRig16 with group
// commit: submissions within the window share one batch write. No
// SubmitQueue runs, so the figures are the acknowledgement path alone.
func BenchmarkSubmitOnRig16Batched(b *testing.B) {
	_, admin := rigServer(b)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "batches-bench"}}
	if err := admin.c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for _, window := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		b.Run("window="+window.String(), func(b *testing.B) {
			ts, backend := rigServerWith(b, unthrottled(b), Options{Namespace: ns.Name, SubmitWindow: window})
			b.Cleanup(func() {
				_ = backend.c.DeleteAllOf(context.Background(), &corev1.ConfigMap{}, client.InNamespace(ns.Name), client.HasLabels{SubmitBatchLabel})
			})
			benchSubmit(b, ts)
		})
	}
}

// unthrottled is the rig's client configuration without a client-side
// limit (the rig's 200 QPS would measure the limiter, not the server).
func unthrottled(b *testing.B) *rest.Config {
	cfg := e2e.Rig(b).RESTConfig()
	cfg.QPS, cfg.Burst = 1e6, 1e6
	return cfg
}

// benchSubmit posts gpuJob from 16 concurrent clients as fast as answered.
func benchSubmit(b *testing.B, ts *httptest.Server) {
	tok, _ := slurmapi.MintToken(rigKey, "alice", time.Hour)
	client := ts.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(8) // 16 clients on 2 CPUs
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			req, _ := http.NewRequest("POST", ts.URL+"/slurm/v0.0.45/job/submit", strings.NewReader(gpuJob))
			req.Header.Set("X-SLURM-USER-TOKEN", tok)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "submits/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
