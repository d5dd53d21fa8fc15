package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDrainAndResumeNodeOnRig: scontrol update NodeName=a100-1
// State=DRAIN Reason=maint cordons the node and shows it DRAIN with the
// reason and who set it; RESUME brings it back; a plain user may do
// neither, and a drain without a reason is refused, as in Slurm; a cordon
// set outside Sluice is not lifted by RESUME.
func TestDrainAndResumeNodeOnRig(t *testing.T) {
	ts, b := rigServer(t)
	const path = "/slurm/v0.0.44/node/a100-1"
	t.Cleanup(func() { call(t, ts, "slurm", "POST", path, `{"state":["RESUME"]}`) })
	node := func() map[string]any {
		status, doc := call(t, ts, "alice", "GET", path, "")
		if status != http.StatusOK {
			t.Fatalf("GET node: %d %v", status, doc)
		}
		return doc["nodes"].([]any)[0].(map[string]any)
	}
	drained := func(n map[string]any) bool {
		return slices.Contains(n["state"].([]any), any("DRAIN"))
	}
	if status, doc := call(t, ts, "alice", "POST", path, `{"state":["DRAIN"],"reason":"maint"}`); status != http.StatusForbidden {
		t.Errorf("a user drained a node: %d %v", status, doc)
	}
	if status, doc := call(t, ts, "slurm", "POST", path, `{"state":["DRAIN"]}`); status != http.StatusBadRequest {
		t.Errorf("drain without a reason: %d %v", status, doc)
	}
	if status, doc := call(t, ts, "slurm", "POST", path, `{"state":["DRAIN"],"reason":"maint"}`); status != http.StatusOK {
		t.Fatalf("drain: %d %v", status, doc)
	}
	n := node()
	if !drained(n) || n["reason"] != "maint" || n["reason_set_by_user"] != "slurm" {
		t.Errorf("drained node shows state %v reason %v by %v", n["state"], n["reason"], n["reason_set_by_user"])
	}
	if status, doc := call(t, ts, "slurm", "POST", path, `{"state":["RESUME"]}`); status != http.StatusOK {
		t.Fatalf("resume: %d %v", status, doc)
	}
	if n := node(); drained(n) || n["reason"] != "" {
		t.Errorf("resumed node shows state %v reason %v", n["state"], n["reason"])
	}
	if status, _ := call(t, ts, "slurm", "POST", "/slurm/v0.0.44/node/nosuch", `{"state":["RESUME"]}`); status != http.StatusNotFound {
		t.Errorf("unknown node: %d, want 404", status)
	}
	// A cordon set outside Sluice (kubectl drain) is not Slurm's to lift.
	ctx := context.Background()
	cordon := func(on bool) {
		t.Helper()
		// a patch, as kubectl cordon sends: the node's status changes under it
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a100-1"}}
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
		if err := b.c.Patch(ctx, nd, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	t.Cleanup(func() { cordon(false) })
	if status, doc := call(t, ts, "slurm", "POST", path, `{"state":["RESUME"]}`); status != http.StatusConflict {
		t.Errorf("RESUME of a node cordoned with kubectl: %d %v, want 409", status, doc)
	}
	var nd corev1.Node
	if err := b.c.Get(ctx, client.ObjectKey{Name: "a100-1"}, &nd); err != nil || !nd.Spec.Unschedulable {
		t.Errorf("the kubectl cordon was lifted by RESUME (%v)", err)
	}
}
