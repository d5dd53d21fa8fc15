package kube

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
)

// TestJobIDsStartAboveLedger: when the id counter is lost (the local rig
// restarted on its old ledger, a reinstall) the new counter starts above
// the ledger's highest job id, so sacct never shows two jobs under one id;
// an existing counter is never moved back by the ledger.
func TestJobIDsStartAboveLedger(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	ledger, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	floor := func(ctx context.Context) (uint32, error) {
		id, err := ledger.HighestJobID(ctx)
		return uint32(id), err
	}
	newIDs := func() *JobIDs {
		ids := NewJobIDs(b.c, "default", "ledger-floor-ids", 5)
		ids.StartAbove(floor)
		return ids
	}

	first, err := newIDs().Next(ctx)
	if err != nil || first != 1 {
		t.Fatalf("empty ledger, new counter: got %d (%v), want 1", first, err)
	}
	old := accounting.Job{JobID: 41, Name: "before-restart", User: "alice", Account: "nlp", Origin: accounting.OriginSlurm,
		State: accounting.StateCompleted, Submit: time.Now().Add(-time.Hour)}
	if err := ledger.UpsertJob(ctx, old); err != nil {
		t.Fatal(err)
	}

	// The counter exists: the ledger does not move it (it is only read when the counter is new).
	if next, err := newIDs().Next(ctx); err != nil || next != 6 {
		t.Errorf("existing counter: got %d (%v), want 6 (the next block)", next, err)
	}

	// The counter is lost, as when the rig's etcd starts empty.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ledger-floor-ids"}}
	if err := b.c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	got, err := newIDs().Next(ctx)
	if err != nil || got != 42 {
		t.Errorf("lost counter, ledger up to 41: got %d (%v), want 42", got, err)
	}
}
