package launch_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// startAllocation builds the pods of an allocation (a job without a
// script, from job/allocate) of nodes nodes with the pod factory's code
// and starts them as local processes.
func startAllocation(t *testing.T, nodes int, env ...corev1.EnvVar) []*launchtest.Node {
	t.Helper()
	d := &slurmapi.JobDesc{Name: "interactive", User: "alice", Account: "nlp", Nodes: nodes, Tasks: nodes, CPUsPerTask: 1, WorkDir: t.TempDir()}
	pg := kube.PodGroupFor(d, 42)
	binds := make([]bridge.Bind, nodes)
	for i := range binds {
		binds[i].Node = fmt.Sprintf("node-%d", i)
	}
	pods, err := kube.BuildPods(pg, binds, kube.RunAs{Image: "img", LauncherImage: "sluice:test", LaunchKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, env...)
	}
	return launchtest.Start(t, pods, testKey)
}

// relayServer stands in for the Sluice server's attach endpoint: it
// signs for the job with its key and relays with the server's own code
// (the token check and job lookup are tested on the rig).
func relayServer(t *testing.T, launcherAddr string) string {
	t.Helper()
	r := mux.NewRouter()
	up := websocket.Upgrader{}
	r.HandleFunc(slurmapi.JobAttachPath, func(w http.ResponseWriter, req *http.Request) {
		_, raw, err := launch.DecodeAttach(req.Header.Get(launch.AttachHeader))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l, err := launch.DialLauncher(req.Context(), launcherAddr, []byte(testKey), raw)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c, err := up.Upgrade(w, req, nil)
		if err != nil {
			l.Close()
			return
		}
		slurmapi.Relay(c, l)
	})
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestPtyShellThroughRelay is `sluice srun --pty bash` on a two-node
// allocation: the user's terminal (a pty here) reaches a shell on the
// batch host through the relay; the shell sees a terminal of the user's
// size and the step's SLURM_* values, follows a window resize, and its
// exit status is srun's and ends the allocation with it.
func TestPtyShellThroughRelay(t *testing.T) {
	nodes := startAllocation(t, 2)
	url := relayServer(t, nodes[0].Addr)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	scr := launchtest.Watch(ptmx)
	type result struct {
		rc  int
		err error
	}
	res := make(chan result, 1)
	go func() {
		rc, err := launch.Attach(context.Background(), url, "token", 42, launch.AttachRequest{Argv: []string{"bash", "--norc", "-i"}, Pty: true, EndJob: true},
			launch.Terminal{In: tty, Out: tty, Err: tty})
		res <- result{rc, err}
	}()
	type_ := func(s string) {
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	type_(`test -t 0 && echo "tty-$((1+1))"; stty size; echo "job $SLURM_JOB_ID step $SLURM_STEP_ID task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME"` + "\n")
	for _, want := range []string{"tty-2", "40 100", "job 42 step 0 task 0 of 1 on node-0"} {
		if !scr.WaitFor(want) {
			state := "srun --pty still runs"
			select {
			case r := <-res:
				state = fmt.Sprintf("srun --pty ended with %d, %v", r.rc, r.err)
			default:
			}
			t.Fatalf("the shell did not show %q (%s):\n%s", want, state, scr)
		}
	}
	// A resize reaches the shell's terminal: the client hears SIGWINCH.
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	// The resize frame and the typed line travel on separate paths: ask
	// until the new size shows.
	resized := make(chan bool, 1)
	go func() { resized <- scr.WaitFor("50 132") }()
	for asking := true; asking; {
		type_("stty size\n")
		select {
		case ok := <-resized:
			if !ok {
				t.Fatalf("the shell's terminal never became 50x132:\n%s", scr)
			}
			asking = false
		case <-time.After(200 * time.Millisecond):
		}
	}
	type_("exit 7\n")
	r := <-res
	if r.err != nil || r.rc != 7 {
		t.Fatalf("srun --pty ended with %d, %v; want the shell's 7", r.rc, r.err)
	}
	// The allocation ends with the shell's status, after reporting the
	// step; the other node's launcher is told to end.
	if rc := finish(t, nodes); rc != 7 {
		t.Fatalf("the batch host exited %d, want 7: %q", rc, nodes[0].Stderr().All())
	}
	st := steps(t, nodes[0])
	if len(st) != 1 || st[0].StepID != "0" || st[0].Name != "bash" || st[0].ExitCode != 7 || st[0].State != accounting.StateFailed {
		t.Errorf("step report %+v, want step 0 (bash) FAILED with 7", st)
	}
}

// TestSrunStdinThroughRelay is `sluice srun` without --pty in an
// allocation: the user's stdin reaches task 0 of the step (through the
// relay, the launcher's srun and, task 0 being on the batch host, as its
// stdin) and its end too, so a task reading to the end finishes; the
// other task reads nothing.
func TestSrunStdinThroughRelay(t *testing.T) {
	nodes := startAllocation(t, 2)
	url := relayServer(t, nodes[0].Addr)
	waitListening(t, nodes[0].Addr)
	inPath := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(inPath, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(inPath)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out, errOut strings.Builder
	rc, err := launch.Attach(context.Background(), url, "token", 42, launch.AttachRequest{Srun: true, Argv: []string{"-l", "sh", "-c", "cat; echo end"}, EndJob: true},
		launch.Terminal{In: in, Out: &out, Err: &errOut})
	if err != nil || rc != 0 {
		t.Fatalf("srun: %d %v: %q", rc, err, errOut.String())
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(got)
	if want := []string{"0: end", "0: line one", "0: line two", "1: end"}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	finish(t, nodes)
}

// waitListening waits until the launcher at addr accepts connections (a
// pod's launcher is reachable some time after its pod starts).
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if i == 1200 {
			t.Fatalf("the launcher at %s never listened: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
