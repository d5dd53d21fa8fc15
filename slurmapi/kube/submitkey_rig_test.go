package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

const keyedJob = `{"script":"#!/bin/bash\n#SBATCH -J keyed --gres=gpu:1 -t 5\nhostname\n","job":{"environment":["PATH=/bin"]}}`

// submitWithKey posts body as user with an Idempotency-Key and returns the
// status and the job id (0 when refused).
func submitWithKey(t *testing.T, ts *httptest.Server, user, key, body string) (int, uint32, string) {
	t.Helper()
	tok, err := slurmapi.MintToken(rigKey, user, time.Hour)
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/slurm/v0.0.44/job/submit", strings.NewReader(body))
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	if key != "" {
		req.Header.Set(slurmapi.IdempotencyKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var id uint32
	if resp.StatusCode == http.StatusOK {
		if i := strings.Index(string(raw), `"job_id":`); i >= 0 {
			rest := string(raw[i+len(`"job_id":`):])
			n, _ := strconv.ParseUint(strings.TrimSpace(rest[:strings.IndexAny(rest, ",}")]), 10, 32)
			id = uint32(n)
		}
	}
	return resp.StatusCode, id, string(raw)
}

// storedGroups counts the PodGroups and batched jobs stored for job id.
func storedGroups(t *testing.T, b *Backend, id uint32) int {
	t.Helper()
	groups, err := b.podGroups(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.PodGroupList
	if err := b.c.List(context.Background(), &list, client.MatchingLabels{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(id), 10)}); err != nil {
		t.Fatal(err)
	}
	return max(len(groups), len(list.Items))
}

// TestIdempotencyKeyOnRig: a retried submission returns the first one's job
// id and stores nothing new, also when the retries race each other, with
// group commit on or off; the key is per user; another body under a used
// key is refused; and a claim whose job was never stored (the replica died
// between the claim and the store) is completed by the retry under its id.
func TestIdempotencyKeyOnRig(t *testing.T) {
	ts, b := rigServer(t)
	checkIdempotencyKey(t, ts, b)
}

// TestIdempotencyKeyBatchedOnRig is TestIdempotencyKeyOnRig with group
// commit: the jobs stay in their batches (no SubmitQueue runs), where a
// retry racing the first attempt may store a job a second time; it is still
// one job.
func TestIdempotencyKeyBatchedOnRig(t *testing.T) {
	ts, b := batchServer(t, 5*time.Millisecond)
	checkIdempotencyKey(t, ts, b)
}

func checkIdempotencyKey(t *testing.T, ts *httptest.Server, b *Backend) {
	t.Helper()
	key := fmt.Sprintf("retry-%s-%d", b.opts.Namespace, time.Now().UnixNano())

	status, first, raw := submitWithKey(t, ts, "alice", key, keyedJob)
	if status != http.StatusOK || first == 0 {
		t.Fatalf("first submission: %d %s", status, raw)
	}
	if status, again, raw := submitWithKey(t, ts, "alice", key, keyedJob); status != http.StatusOK || again != first {
		t.Errorf("retry: %d job %d (%s), want 200 and job %d", status, again, raw, first)
	}

	// Eight retries at once, under a new key: one job.
	raceKey := key + "-race"
	ids, answers := make([]uint32, 8), make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var status int
			status, ids[i], answers[i] = submitWithKey(t, ts, "alice", raceKey, keyedJob)
			answers[i] = fmt.Sprintf("%d %s", status, answers[i])
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == 0 || id != ids[0] {
			t.Fatalf("racing retries got job ids %v, want one id; answers %q", ids, answers)
		}
	}
	if n := storedGroups(t, b, ids[0]); n != 1 {
		t.Errorf("job %d stored %d times", ids[0], n)
	}

	if status, other, _ := submitWithKey(t, ts, "bob", key, strings.Replace(keyedJob, "gpu:1", "gpu:1 -A vision", 1)); status != http.StatusOK || other == first {
		t.Errorf("bob with alice's key: %d job %d, want 200 and a job of his own (alice's is %d)", status, other, first)
	}
	status, _, raw = submitWithKey(t, ts, "alice", key, strings.Replace(keyedJob, "-J keyed", "-J other", 1))
	if status != http.StatusUnprocessableEntity || !strings.Contains(raw, fmt.Sprintf("job %d", first)) {
		t.Errorf("another body under a used key: %d %s, want 422 naming job %d", status, raw, first)
	}

	// A claim left by a submission that died before storing its job.
	orphanKey := key + "-orphan"
	id, err := b.JobIDs().Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	desc := &slurmapi.JobDesc{User: "alice", IdempotencyKey: orphanKey, BodyHash: hashOf(keyedJob)}
	if _, created, err := b.claimKey(context.Background(), desc, id); err != nil || !created {
		t.Fatalf("claim: created %v, %v", created, err)
	}
	if status, got, raw := submitWithKey(t, ts, "alice", orphanKey, keyedJob); status != http.StatusOK || got != id {
		t.Fatalf("retry of an unstored claim: %d job %d (%s), want job %d", status, got, raw, id)
	}
	if n := storedGroups(t, b, id); n != 1 {
		t.Errorf("job %d of the unstored claim stored %d times, want 1", id, n)
	}
}

// hashOf is the body hash the REST server gives the backend (slurmapi.idempotencyKey).
func hashOf(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// TestOldClaimsArePrunedOnRig: claims older than a day are deleted, younger
// ones kept.
func TestOldClaimsArePrunedOnRig(t *testing.T) {
	_, admin := rigServer(t)
	ns := batchNamespace(t, admin) // a namespace of its own: pruning sees only this test's claims
	b, err := New(e2e.Rig(t).RESTConfig(), Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	desc := &slurmapi.JobDesc{User: "alice", IdempotencyKey: "old", BodyHash: hashOf(keyedJob)}
	if _, created, err := b.claimKey(context.Background(), desc, 7); err != nil || !created {
		t.Fatalf("claim: created %v, %v", created, err)
	}
	b.pruneClaims(time.Now().Add(23 * time.Hour)) // a pass while the claim is 23 hours old
	if _, ok, err := b.readClaim(context.Background(), desc); err != nil || !ok {
		t.Fatalf("claim gone before it was a day old (%v)", err)
	}
	b.pruneClaims(time.Now().Add(25 * time.Hour))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, ok, err := b.readClaim(context.Background(), desc)
		if err == nil && !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim older than a day still there (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
