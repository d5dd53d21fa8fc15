package bench

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// TestMain builds the sluice binary the Sluice contender runs as `sluice server`.
func TestMain(m *testing.M) {
	os.Exit(sluiceproc.Main(m.Run))
}

// TestEveryContenderBindsEveryPod runs the whole benchmark small: 20 nodes x 8 GPUs and
// 100 pods, every contender, every mode, once each. It asserts that each run ends with
// every pod bound and Running and that the scheduler's writes and the API server's CPU
// were counted; speed is for `sluice bench`, never asserted here.
func TestEveryContenderBindsEveryPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four rigs")
	}
	if _, err := assetPath("", "kube-apiserver"); err != nil {
		t.Skip(err)
	}
	results, err := Run(context.Background(), Options{Nodes: 20, GPUsPerNode: 8, Pods: 100, Repeats: 1,
		Only: AllContenders, Modes: AllModes, SluiceBinary: sluiceproc.Binary(t), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	// A stream and a backlog each, and a reclaim for each of Sluice's contenders.
	want := 2 * len(AllContenders)
	for _, name := range AllContenders {
		if isSluice(name) {
			want++
		}
	}
	if len(results) != want {
		t.Fatalf("%d results, want %d", len(results), want)
	}
	for _, r := range results {
		if r.ToBound <= 0 || r.ToRunning < r.ToBound || r.BindP50 <= 0 || r.BindP99 < r.BindP50 || r.BindMax < r.BindP99 {
			t.Errorf("%s %s: bound after %s (p50 %s, p99 %s, max %s), Running after %s", r.Contender, r.Mode, r.ToBound, r.BindP50, r.BindP99, r.BindMax, r.ToRunning)
		}
		// Every contender binds each pod through pods/binding at least once.
		if got := r.Writes["POST pods/binding"]; got < float64(r.Pods) {
			t.Errorf("%s %s: %v bindings for %d pods", r.Contender, r.Mode, got, r.Pods)
		}
		// Each reclaim sample found the cluster full: it had to evict a pod first.
		if got := r.Writes["POST pods/eviction"]; r.Mode == modeReclaim && got < float64(r.Pods) {
			t.Errorf("%s %s: %v evictions for %d pods", r.Contender, r.Mode, got, r.Pods)
		}
		if r.APIServerCPU <= 0 || r.CPUSeconds <= 0 || r.PeakRSSMiB <= 0 {
			t.Errorf("%s %s: apiserver %.2f CPU-s, scheduler %.2f CPU-s and %.0f MiB: not measured", r.Contender, r.Mode, r.APIServerCPU, r.CPUSeconds, r.PeakRSSMiB)
		}
	}
	if err := PrintTable(os.Stdout, results); err != nil {
		t.Fatal(err)
	}
}

// TestClusterIdentitiesBindEveryPod runs Sluice as the chart's ServiceAccount (only the
// chart's RBAC) and kube-scheduler as system:kube-scheduler on an API server with its
// default request limits: each still binds every pod. The harness refuses to run when
// either identity would be exempt from priority and fairness.
func TestClusterIdentitiesBindEveryPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two rigs")
	}
	if _, err := assetPath("", "kube-apiserver"); err != nil {
		t.Skip(err)
	}
	results, err := Run(context.Background(), Options{Nodes: 20, GPUsPerNode: 8, Pods: 100, Repeats: 1,
		Only: []string{Sluice, KubeScheduler}, Modes: []string{modeStream}, ClusterIdentities: true,
		SluiceBinary: sluiceproc.Binary(t), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for _, r := range results {
		if r.ToBound <= 0 || r.Writes["POST pods/binding"] < float64(r.Pods) {
			t.Errorf("%s: bound after %s with %v bindings for %d pods", r.Contender, r.ToBound, r.Writes["POST pods/binding"], r.Pods)
		}
	}
}

// TestClaimsBindEveryPod runs Sluice as installed and kube-scheduler with every pod's GPU
// from a claim made from a template (Options.Claims), as many pods as GPUs, twice per
// mode: the second run binds every pod only if the first one's claims were freed. Both
// run as in a cluster (Options.ClusterIdentities), so the chart's RBAC must let Sluice
// write an allocation. Each
// contender writes every pod's claim's allocation; the claims the resource claim
// controller makes are not counted as theirs.
func TestClaimsBindEveryPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two rigs")
	}
	if _, err := assetPath("", "kube-apiserver"); err != nil {
		t.Skip(err)
	}
	results, err := Run(context.Background(), Options{Nodes: 10, GPUsPerNode: 8, Pods: 80, Repeats: 2, Claims: true,
		Modes: AllModes, ClusterIdentities: true, SluiceBinary: sluiceproc.Binary(t), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	// Two streams and two backlogs each (the bare binder left out), and Sluice's reclaim.
	if len(results) != 9 {
		t.Fatalf("%d results, want 9", len(results))
	}
	for _, r := range results {
		if r.Contender == Bare {
			t.Errorf("the bare binder ran with claims")
		}
		if r.ToBound <= 0 || r.Writes["POST pods/binding"] < float64(r.Pods) {
			t.Errorf("%s %s %d: bound after %s with %v bindings for %d pods", r.Contender, r.Mode, r.Repeat, r.ToBound, r.Writes["POST pods/binding"], r.Pods)
		}
		if got := r.Writes["PUT resourceclaims/status"]; got < float64(r.Pods) {
			t.Errorf("%s %s %d: %v claim allocations written for %d pods (writes %v)", r.Contender, r.Mode, r.Repeat, got, r.Pods, r.Writes)
		}
		if got := r.Writes["POST resourceclaims"]; got != 0 {
			t.Errorf("%s %s %d: the resource claim controller's %v claims counted as the scheduler's", r.Contender, r.Mode, r.Repeat, got)
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}

// Options are refused before any rig starts when a run could not honour them; with
// claims, the bare binder (it allocates nothing) is left out of the default contenders
// and refused when named.
func TestOptionsValidate(t *testing.T) {
	base := Options{Nodes: 2, GPUsPerNode: 8, Pods: 16, SluiceBinary: "sluice"}
	tests := []struct {
		name     string
		edit     func(*Options)
		wantOnly []string
		wantErr  string // "" for none
	}{
		{"defaults", func(*Options) {}, Contenders, ""},
		{"claims leave the bare binder out", func(o *Options) { o.Claims = true }, []string{Sluice, KubeScheduler}, ""},
		{"claims with Sluice and kube-scheduler", func(o *Options) { o.Claims, o.Only = true, []string{Sluice, KubeScheduler} }, []string{Sluice, KubeScheduler}, ""},
		{"claims with Sluice's scheduler alone", func(o *Options) { o.Claims, o.Only = true, []string{SluiceScheduler} }, []string{SluiceScheduler}, ""},
		{"claims with the bare binder", func(o *Options) { o.Claims, o.Only = true, []string{Sluice, Bare} }, nil, "binds without allocating resource claims"},
		{"the bare binder without claims", func(o *Options) { o.Only = []string{Bare} }, []string{Bare}, ""},
		{"too many pods", func(o *Options) { o.Pods = 17 }, nil, "do not fit"},
		{"unknown contender", func(o *Options) { o.Only = []string{"slurm"} }, nil, "unknown contender"},
		{"unknown mode", func(o *Options) { o.Modes = []string{"burst"} }, nil, "unknown mode"},
		{"Sluice without its binary", func(o *Options) { o.SluiceBinary = "" }, nil, "need Options.SluiceBinary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.edit(&o)
			o = o.withDefaults()
			err := o.validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("validate: %v, want an error with %q", err, tt.wantErr)
			}
			if tt.wantOnly != nil && !slices.Equal(o.Only, tt.wantOnly) {
				t.Errorf("contenders %v, want %v", o.Only, tt.wantOnly)
			}
		})
	}
	// The default list itself is left as it was.
	if !slices.Contains(Contenders, Bare) {
		t.Errorf("Contenders lost %s: %v", Bare, Contenders)
	}
}
