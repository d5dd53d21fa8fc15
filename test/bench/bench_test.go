package bench

import (
	"context"
	"os"
	"testing"
)

// TestEveryContenderBindsEveryPod runs the whole benchmark small: 20 nodes x 8 GPUs and
// 100 pods, every contender, both modes. It asserts that each run ends with every pod
// bound and Running and that the scheduler's writes were counted; speed is for
// `sluice bench`, never asserted here.
func TestEveryContenderBindsEveryPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three rigs")
	}
	if _, err := assetPath("", "kube-apiserver"); err != nil {
		t.Skip(err)
	}
	results, err := Run(context.Background(), Options{Nodes: 20, GPUsPerNode: 8, Pods: 100, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2*len(Contenders)+1 {
		t.Fatalf("%d results, want %d", len(results), 2*len(Contenders)+1)
	}
	for _, r := range results {
		if r.ToBound <= 0 || r.ToRunning < r.ToBound || r.BindP50 <= 0 || r.BindMax < r.BindP50 {
			t.Errorf("%s %s: bound after %s (p50 %s, max %s), Running after %s", r.Contender, r.Mode, r.ToBound, r.BindP50, r.BindMax, r.ToRunning)
		}
		// Every contender binds each pod through pods/binding at least once.
		if got := r.Writes["POST pods/binding"]; got < float64(r.Pods) {
			t.Errorf("%s %s: %v bindings for %d pods", r.Contender, r.Mode, got, r.Pods)
		}
		// Each reclaim sample found the cluster full: it had to evict a pod first.
		if got := r.Writes["POST pods/eviction"]; r.Mode == modeReclaim && got < float64(r.Pods) {
			t.Errorf("%s %s: %v evictions for %d pods", r.Contender, r.Mode, got, r.Pods)
		}
	}
	if err := PrintTable(os.Stdout, results); err != nil {
		t.Fatal(err)
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}
