package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestMain starts one rig for the tests that need a server; -short skips them.
func TestMain(m *testing.M) { os.Exit(e2e.Main(m, cluster.DefaultSpec())) }

var key = bytes.Repeat([]byte("c"), 32)

// siteServer is the REST API on the rig with the example site applied.
func siteServer(t *testing.T) *httptest.Server {
	t.Helper()
	rig := e2e.Rig(t)
	ctx := context.Background()
	if err := crds.Install(ctx, rig.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	b, err := kube.New(rig.RESTConfig(), kube.Options{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := examples.Objects(examples.Site)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := crclient.New(rig.RESTConfig(), crclient.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	srv, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: key, Operators: []string{"slurm"}, Admins: []string{"root"}}}, b)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func as(t *testing.T, ts *httptest.Server, user string) *client.Client {
	t.Helper()
	tok, err := slurmapi.MintToken(key, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &client.Client{URL: ts.URL, Token: tok, HTTP: ts.Client()}
}

// TestScontrolCallsOnRig: what scontrol and sinfo read and change, through
// the client, against the server on a real API server.
func TestScontrolCallsOnRig(t *testing.T) {
	ts := siteServer(t)
	alice, bob := as(t, ts, "alice"), as(t, ts, "bob")
	ctx := context.Background()

	parts, err := alice.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defaults := 0
	for _, p := range parts {
		if p.IsDefault() {
			defaults++
			if p.Name != "h100" {
				t.Errorf("default partition %s, want h100 (site.yaml)", p.Name)
			}
		}
	}
	if defaults != 1 {
		t.Errorf("%d default partitions, want 1: %+v", defaults, parts)
	}
	if p, err := alice.Partition(ctx, "a100"); err != nil || p.IsDefault() || p.Nodes.Total == 0 {
		t.Errorf("partition a100: %+v %v", p, err)
	}
	if _, err := alice.Partition(ctx, "v100"); !client.IsNotFound(err) {
		t.Errorf("unknown partition: %v, want not found", err)
	}
	nodes, err := alice.Nodes(ctx)
	if err != nil || len(nodes) == 0 {
		t.Fatalf("nodes: %d %v", len(nodes), err)
	}
	if n, err := alice.Node(ctx, nodes[0].Name); err != nil || n.Name != nodes[0].Name || n.GRES == "" {
		t.Errorf("node %s: %+v %v", nodes[0].Name, n, err)
	}
	if _, err := alice.Node(ctx, "no-such-node"); !client.IsNotFound(err) {
		t.Errorf("unknown node: %v, want not found", err)
	}

	id, warnings, err := alice.Submit(ctx, map[string]any{"script": "#!/bin/sh\ntrue\n", "environment": []string{"PATH=/bin"}, "time_limit": client.Set(30)})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("submit: warnings %q, %v; want none", warnings, err)
	}
	ref := func(id uint32) string { return strconv.FormatUint(uint64(id), 10) }
	if _, err := alice.JobRecords(ctx, "99999999"); !client.IsNotFound(err) {
		t.Errorf("unknown job: %v, want not found", err)
	}
	// Everyone sees the queue (no PrivateData), and changes only their own jobs.
	if jobs, err := bob.JobRecords(ctx, ref(id)); err != nil || len(jobs) != 1 || jobs[0].UserName != "alice" {
		t.Errorf("bob reading alice's job: %v, %v; want it, alice's", jobs, err)
	}
	if err := bob.Update(ctx, id, map[string]any{"hold": true}); !client.IsForbidden(err) {
		t.Errorf("bob holding alice's job: %v, want forbidden", err)
	}
	steps := []struct {
		name   string
		change func() error
		check  func(client.Job) bool
	}{
		{"hold", func() error { return alice.Update(ctx, id, map[string]any{"hold": true}) }, func(j client.Job) bool { return j.Hold }},
		{"release", func() error { return alice.Update(ctx, id, map[string]any{"hold": false}) }, func(j client.Job) bool { return !j.Hold }},
		{"lower the time limit", func() error { return alice.Update(ctx, id, map[string]any{"time_limit": client.Set(10)}) },
			func(j client.Job) bool { v, ok := j.TimeLimit.Value(); return ok && v == 10 }},
		{"comment", func() error { return alice.Update(ctx, id, map[string]any{"comment": "rerun"}) },
			func(j client.Job) bool { return j.Comment == "rerun" }},
	}
	for _, s := range steps {
		if err := s.change(); err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		jobs, err := alice.JobRecords(ctx, ref(id))
		if err != nil || len(jobs) != 1 || !s.check(jobs[0]) {
			t.Errorf("after %s: %+v %v", s.name, jobs, err)
		}
	}
	if err := alice.Update(ctx, id, map[string]any{"priority": client.Set(5)}); !client.IsForbidden(err) {
		t.Errorf("alice setting a priority: %v, want forbidden (operators only)", err)
	}
	var conflict *client.APIError
	if err := alice.Requeue(ctx, id, false); !errors.As(err, &conflict) || conflict.Status != http.StatusConflict || !strings.Contains(err.Error(), "pending") {
		t.Errorf("requeueing a pending job: %v, want 409 saying it is pending", err)
	}
}

// TestSubmitReturnsTheServersWarnings: a #SBATCH directive Sluice ignores
// comes back in the submit answer's warnings[], once; a plain script gets none.
func TestSubmitReturnsTheServersWarnings(t *testing.T) {
	alice := as(t, siteServer(t), "alice")
	for _, tc := range []struct {
		name, script string
		want         []string // substrings, one per warning
	}{
		{"no ignored directives", "#!/bin/sh\n#SBATCH --time=5\ntrue\n", nil},
		{"mail-type", "#!/bin/sh\n#SBATCH --mail-type=END\ntrue\n", []string{"--mail-type"}},
		{"wckey, not open-mode (honoured)", "#!/bin/sh\n#SBATCH --wckey=x\n#SBATCH --open-mode=append\n#SBATCH --signal=USR1\ntrue\n", []string{"--wckey"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := alice.Submit(context.Background(), map[string]any{"script": tc.script, "environment": []string{"PATH=/bin"}, "hold": true})
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d naming %q", warnings, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d %q does not name %s", i, warnings[i], w)
				}
			}
		})
	}
}

// TestScontrolDrainsNodeOnRig: scontrol update NodeName=h100-0 State=DRAIN
// Reason=maint, through the client, shows the node drained with its
// reason in sinfo's view (the nodes list); RESUME brings it back; a plain
// user may do neither.
func TestScontrolDrainsNodeOnRig(t *testing.T) {
	ts := siteServer(t)
	alice, operator := as(t, ts, "alice"), as(t, ts, "slurm")
	ctx := context.Background()
	const name = "h100-0"
	t.Cleanup(func() { operator.UpdateNode(ctx, name, map[string]any{"state": []string{"RESUME"}}) })
	node := func() client.Node {
		t.Helper()
		n, err := alice.Node(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	drained := func(n client.Node) bool { return slices.Contains(n.State, "DRAIN") }
	if _, err := alice.UpdateNode(ctx, name, map[string]any{"state": []string{"DRAIN"}, "reason": "maint"}); !client.IsForbidden(err) {
		t.Errorf("alice drained a node: %v, want forbidden", err)
	}
	if _, err := operator.UpdateNode(ctx, name, map[string]any{"state": []string{"DRAIN"}, "reason": "maint"}); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n := node(); !drained(n) || n.Reason != "maint" || n.ReasonSetUser != "slurm" {
		t.Errorf("drained node: state %v reason %q by %q", n.State, n.Reason, n.ReasonSetUser)
	}
	if _, err := operator.UpdateNode(ctx, name, map[string]any{"state": []string{"RESUME"}}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if n := node(); drained(n) || n.Reason != "" {
		t.Errorf("resumed node: state %v reason %q", n.State, n.Reason)
	}
}

// TestSacctmgrReadsOnRig: what sacctmgr and sprio read of slurmdb decodes
// from the server's real answers on the example site.
func TestSacctmgrReadsOnRig(t *testing.T) {
	ts := siteServer(t)
	alice := as(t, ts, "alice")
	ctx := context.Background()
	qos, err := alice.QOSList(ctx)
	if err != nil || !slices.ContainsFunc(qos, func(q client.QOS) bool { return q.Name == "normal" }) {
		t.Errorf("QOS: %+v %v, want normal among them", qos, err)
	}
	accounts, err := alice.Accounts(ctx)
	if err != nil || !slices.ContainsFunc(accounts, func(a client.Account) bool { return a.Name == "nlp" }) {
		t.Errorf("accounts: %+v %v, want nlp among them", accounts, err)
	}
	users, err := alice.Users(ctx)
	if err != nil || !slices.ContainsFunc(users, func(u client.User) bool { return u.Name == "alice" && u.Default.Account == "nlp" }) {
		t.Errorf("users: %+v %v, want alice with default account nlp", users, err)
	}
	assocs, err := alice.Associations(ctx)
	if err != nil || !slices.ContainsFunc(assocs, func(a client.Association) bool { return a.User == "alice" && a.Account == "nlp" }) {
		t.Errorf("associations: %+v %v, want alice in nlp", assocs, err)
	}
}

// TestScancelOneArrayTaskOnRig: scancel 123_2 cancels task 2 only (as in
// Slurm); the array's other tasks stay pending.
func TestScancelOneArrayTaskOnRig(t *testing.T) {
	ts := siteServer(t)
	alice := as(t, ts, "alice")
	ctx := context.Background()
	id, _, err := alice.Submit(ctx, map[string]any{"script": "#!/bin/sh\ntrue\n", "environment": []string{"PATH=/bin"}, "array": "0-3", "hold": true})
	if err != nil {
		t.Fatal(err)
	}
	ref := strconv.FormatUint(uint64(id), 10)
	t.Cleanup(func() { alice.Cancel(ctx, id, "") })
	if err := alice.CancelRef(ctx, ref+"_2", ""); err != nil {
		t.Fatalf("scancel %s_2: %v", ref, err)
	}
	jobs, err := alice.JobRecords(ctx, ref)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("records of %s: %v %v", ref, jobs, err)
	}
	if rec := jobs[0]; rec.State() != "PENDING" || rec.ArrayTaskString != "0-1,3" {
		t.Errorf("after scancel %s_2 the array is %s with tasks %q, want PENDING with 0-1,3", ref, rec.State(), rec.ArrayTaskString)
	}
}
