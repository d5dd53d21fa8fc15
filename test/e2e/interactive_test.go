package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	slurmclient "github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// attachSite is slurmSite with the REST API and the attach endpoint on one
// listener, as `sluice server` mounts them. Pods on the rig run no
// processes, so the job's pods are started as local processes and addrs
// maps each pod to its launcher's local address (its IP on a cluster).
func attachSite(t *testing.T) (url string, addrs *sync.Map) {
	t.Helper()
	return newAttachSite(t, true)
}

// newAttachSite is attachSite; without local, the server treats the rig's
// simulated nodes as it would on any cluster (no launcher runs there).
func newAttachSite(t *testing.T, local bool) (url string, addrs *sync.Map) {
	t.Helper()
	slurmSite(t) // the scheduler, the pod factory and the lifecycle
	cfg := Rig(t).RESTConfig()
	backend, err := kube.New(cfg, kube.Options{Namespace: "default", IDBlock: 10, TokenKey: slurmKey})
	if err != nil {
		t.Fatal(err)
	}
	launchers, err := kube.NewLaunchers(cfg, slurmKey)
	if err != nil {
		t.Fatal(err)
	}
	api, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: slurmKey, Operators: []string{"slurm"}}, Steps: launchers}, backend)
	if err != nil {
		t.Fatal(err)
	}
	addrs = &sync.Map{}
	if !local {
		return serveAttach(t, api, launchers), addrs
	}
	// The pods' launchers run here as local processes, not in kwok's pods.
	launchers.Simulated = func(context.Context, *corev1.Pod) (bool, error) { return false, nil }
	launchers.Addr = func(p *corev1.Pod) string {
		a, ok := addrs.Load(p.Name)
		if !ok {
			return "127.0.0.1:1" // not started: refused, as a pod not listening yet
		}
		return a.(string)
	}
	return serveAttach(t, api, launchers), addrs
}

// serveAttach serves api with its attach and steps endpoints, as `sluice server` does.
func serveAttach(t *testing.T, api *slurmapi.Server, launchers *kube.Launchers) string {
	r := mux.NewRouter()
	r.Handle(slurmapi.JobAttachPath, api.JobAttachHandler(launchers)).Methods(http.MethodGet)
	r.Handle(slurmapi.JobStepsPath, api.JobStepsHandler()).Methods(http.MethodGet)
	r.PathPrefix("/slurm/").Handler(api)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return ts.URL
}

func userClient(t *testing.T, url, user string) *slurmclient.Client {
	t.Helper()
	tok, err := slurmapi.MintToken(slurmKey, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &slurmclient.Client{URL: url, Token: tok, HTTP: &http.Client{Timeout: time.Minute}}
}

// TestInteractiveAllocationOnRig is salloc and `srun --pty bash` through
// the server with a user's token: job/allocate makes a two-node job whose
// pods serve attaches with the key the server derives; a step from the
// user's shell runs on both nodes; another user is refused; a pty shell
// on the batch host gets a terminal, and its exit status is srun's and
// ends the allocation.
func TestInteractiveAllocationOnRig(t *testing.T) {
	url, addrs := attachSite(t)
	ctx := context.Background()
	alice := userClient(t, url, "alice")
	job := map[string]any{"partition": "h100", "nodes": "2", "tasks": 2, "tres_per_node": "gres/gpu:1", "name": "bash",
		"environment": []string{"PATH=/usr/bin:/bin"}, "current_working_directory": t.TempDir()}
	a, err := launch.Allocate(ctx, alice, job, "srun", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	WaitFor(t, fmt.Sprintf("job %d's 2 pods", a.ID), time.Minute, func(ctx context.Context) (bool, error) {
		pods = jobPods(t, ctx, int(a.ID))
		return len(pods) == 2, fmt.Errorf("%d pods", len(pods))
	})
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	// The Secret holds the key the server derives, and the pods carry its
	// fingerprint: the launchers check the mounted key against it.
	var pg v1alpha1.PodGroup
	c := Rig(t).Client()
	kc, err := kube.NewClient(Rig(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: kube.Namespace("nlp"), Name: kube.PodGroupName(a.ID)}, &pg); err != nil {
		t.Fatal(err)
	}
	sec, err := c.CoreV1().Secrets(pg.Namespace).Get(ctx, kube.LaunchSecretName(&pg, kube.LaunchKey(slurmKey, &pg)), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("launch key Secret: %v", err)
	}
	if got := string(sec.Data[kube.LaunchKeyField]); got != kube.LaunchKey(slurmKey, &pg) {
		t.Fatalf("the Secret's key is not the one the server derives")
	}
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	// The job's environment Secret too, as the kubelet would mount it.
	secrets, err := c.CoreV1().Secrets(pg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.JobIDLabel + "=" + pg.Labels[v1alpha1.JobIDLabel]})
	if err != nil {
		t.Fatal(err)
	}
	var mounted []*corev1.Secret
	for i := range secrets.Items {
		mounted = append(mounted, &secrets.Items[i])
	}
	nodes := launchtest.Start(t, ptrs, string(sec.Data[kube.LaunchKeyField]), mounted...)
	for i, n := range nodes {
		addrs.Store(pods[i].Name, n.Addr)
	}

	// Only the job's owner may run commands in it.
	_, err = launch.Attach(ctx, url, userClient(t, url, "bob").Token, a.ID, launch.AttachRequest{Argv: []string{"true"}}, launch.Terminal{})
	var apiErr *slurmclient.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Errorf("bob's attach to alice's job: %v, want 403", err)
	}

	// A step from salloc's shell: srun's options go to the launcher's srun.
	var out, errOut strings.Builder
	in, _ := os.Open(os.DevNull)
	defer in.Close()
	rc, err := launch.AttachWhenUp(ctx, alice, a.ID, launch.AttachRequest{Srun: true, Argv: []string{"-l", "sh", "-c", "echo $SLURM_STEP_ID $SLURMD_NODENAME"}},
		launch.Terminal{In: in, Out: &out, Err: &errOut})
	if err != nil || rc != 0 {
		t.Fatalf("srun step: %d %v: %q", rc, err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(lines)
	want := []string{fmt.Sprintf("0: 0 %s", pods[0].Spec.NodeName), fmt.Sprintf("1: 0 %s", pods[1].Spec.NodeName)}
	if !slices.Equal(lines, want) {
		t.Errorf("step output %q, want %q", lines, want)
	}

	// scancel JOB.STEP through the REST API: that step's tasks end, the
	// allocation goes on. Step 1 runs until signalled.
	var out2, errOut2 lockedBuilder
	stepDone := make(chan error, 1)
	go func() {
		rc, err := launch.AttachWhenUp(ctx, alice, a.ID, launch.AttachRequest{Srun: true,
			Argv: []string{"sh", "-c", `trap "echo term $SLURM_PROCID; exit 0" TERM; echo ready $SLURM_PROCID; while :; do sleep 1; done`}},
			launch.Terminal{In: in, Out: &out2, Err: &errOut2})
		if err == nil && rc != 0 {
			err = fmt.Errorf("srun step 1 exited %d: %q", rc, errOut2.String())
		}
		stepDone <- err
	}()
	WaitFor(t, "step 1's tasks", time.Minute, func(context.Context) (bool, error) {
		return strings.Contains(out2.String(), "ready 0") && strings.Contains(out2.String(), "ready 1"), fmt.Errorf("output %q", out2.String())
	})
	// While they run, the steps are the batch host's word: step 0 ended,
	// step 1 RUNNING since its start (sacct -j and slurmdb job/{id}).
	live, err := alice.JobSteps(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]accounting.Step{}
	for _, st := range live {
		byID[st.StepID] = st
	}
	if s0, s1 := byID["0"], byID["1"]; len(live) != 2 || s0.State != accounting.StateCompleted || s0.End.IsZero() ||
		s1.State != accounting.StateRunning || s1.Start.IsZero() || !s1.End.IsZero() || s1.Tasks != 2 {
		t.Errorf("steps while running: %+v, want 0 COMPLETED and 1 RUNNING", live)
	}
	// Without PrivateData (Slurm's default) bob may read alice's steps, as sacct shows
	// them to him; cancelling one is still hers.
	if steps, err := userClient(t, url, "bob").JobSteps(ctx, a.ID); err != nil || len(steps) != len(live) {
		t.Errorf("bob read alice's steps: %d steps, %v; want the %d she sees", len(steps), err, len(live))
	}
	if err := userClient(t, url, "bob").CancelRef(ctx, fmt.Sprintf("%d.1", a.ID), ""); !slurmclient.IsForbidden(err) {
		t.Errorf("bob's scancel of alice's step: %v, want 403", err)
	}
	if err := alice.CancelRef(ctx, fmt.Sprintf("%d.7", a.ID), ""); !slurmclient.IsNotFound(err) {
		t.Errorf("scancel of a step that does not run: %v, want 404", err)
	}
	if err := alice.CancelRef(ctx, fmt.Sprintf("%d.1", a.ID), ""); err != nil {
		t.Fatalf("scancel %d.1: %v", a.ID, err)
	}
	if err := <-stepDone; err != nil {
		t.Fatal(err)
	}
	if got := out2.String(); !strings.Contains(got, "term 0") || !strings.Contains(got, "term 1") {
		t.Errorf("not every task of step 1 got SIGTERM: %q", got)
	}

	// srun --pty bash: a terminal on the batch host.
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	scr := launchtest.Watch(ptmx)
	res := make(chan error, 1)
	go func() {
		rc, err := launch.AttachWhenUp(ctx, alice, a.ID, launch.AttachRequest{Argv: []string{"bash", "--norc", "-i"}, Pty: true, EndJob: true},
			launch.Terminal{In: tty, Out: tty, Err: tty})
		if err == nil && rc != 5 {
			err = fmt.Errorf("srun --pty exited %d, want the shell's 5", rc)
		}
		res <- err
	}()
	if _, err := ptmx.Write([]byte(`test -t 0 && echo "job-$SLURM_JOB_ID step-$SLURM_STEP_ID"; exit 5` + "\n")); err != nil {
		t.Fatal(err)
	}
	if !scr.WaitFor(fmt.Sprintf("job-%d step-2", a.ID)) {
		t.Errorf("the shell did not run on a terminal in the job:\n%s", scr)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if rc := nodes[0].Wait(); rc != 5 {
		t.Errorf("the batch host ended %d, want the shell's 5: %q", rc, nodes[0].Stderr().All())
	}
	if rc := nodes[1].Wait(); rc != 0 {
		t.Errorf("node 1's launcher ended %d, want 0 once the allocation ended", rc)
	}
}

// lockedBuilder is a strings.Builder written by one goroutine and read by
// another.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStepOnSimulatedNodesSaysWhy: on kwok's nodes no container runs, so a
// step (sluice srun --jobid=N, srun inside salloc) can never reach a
// launcher; the attach says so at once, naming the node and what to use,
// instead of retrying for minutes without a word.
func TestStepOnSimulatedNodesSaysWhy(t *testing.T) {
	url, _ := newAttachSite(t, false)
	ctx := context.Background()
	alice := userClient(t, url, "alice")
	job := map[string]any{"partition": "h100", "nodes": "2", "tasks": 2, "name": "sim",
		"environment": []string{"PATH=/usr/bin:/bin"}, "current_working_directory": t.TempDir()}
	a, err := launch.Allocate(ctx, alice, job, "salloc", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	rc, err := launch.AttachWhenUp(ctx, alice, a.ID, launch.AttachRequest{Srun: true, Argv: []string{"hostname"}},
		launch.Terminal{Out: io.Discard, Err: &errOut})
	var apiErr *slurmclient.APIError
	if rc == 0 || !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Fatalf("srun --jobid=%d hostname on simulated nodes: rc %d, %v; want a 409 refusal", a.ID, rc, err)
	}
	for _, want := range []string{"simulated node (kwok)", "runs no containers", "--real-nodes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if errOut.Len() > 0 {
		t.Errorf("srun retried although no launcher can ever answer: %q", errOut.String())
	}
	// salloc's release finds no launcher either; cancelling ends the job.
	if err := launch.Release(ctx, alice, a.ID, 0); err == nil || !strings.Contains(err.Error(), "simulated node") {
		t.Errorf("release on simulated nodes: %v, want the same refusal", err)
	}
	if err := alice.Cancel(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
}
