package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PMIx: how an Open MPI program (or any PMIx client) started by
// `srun --mpi=pmix` finds its peers.
//
// PMIx clients reach a server on their node through the library's own
// protocol, which only the PMIx library speaks, so each node of such a
// step runs sluice-pmix (pmix/sluice-pmix.c), a small C program linked
// with libpmix.so.2 that the sluice image carries beside the launcher and
// the init container installs with it. The job's image supplies libpmix,
// as every Open MPI install does. The launcher starts it before the
// tasks, gives each task the variables PMIx_server_setup_fork wrote for
// its rank, and carries its fences across the nodes through srun exactly
// as PMI-2's (pmi_fence.go): a node's contribution is one opaque blob,
// under the node's index as key, and each node hands its server every
// node's blob in node order.

// PMIxHelper is the PMIx server's file name beside the launcher.
const PMIxHelper = "sluice-pmix"

// pmixNode is one node's PMIx server for a step.
type pmixNode struct {
	spec StepSpec
	emit func(event)
	key  string // JOB.STEP, its pmiNodes entry
	dir  string // the server's rendezvous directory
	cmd  *exec.Cmd
	in   io.WriteCloser
	errs *tailBuffer
	env  map[int][]string // by rank
	done chan struct{}    // the server exited

	mu       sync.Mutex
	fence    int // fences completed
	stopping bool
}

// pmixHelperPath is where the launcher's PMIx server is: beside the
// running binary.
func pmixHelperPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), PMIxHelper)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("--mpi=pmix: no PMIx server beside the launcher (%s): the sluice image installs it with the launcher; use --mpi=pmi2 for MPICH", p)
	}
	return p, nil
}

// startPMIx starts the node's PMIx server and waits until it has every
// local rank's variables.
func startPMIx(job *Job, spec StepSpec, emit func(event)) (*pmixNode, error) {
	helper, err := pmixHelperPath()
	if err != nil {
		return nil, err
	}
	if len(spec.MPI.Ranks) != len(spec.Nodes) || spec.NodeIndex >= len(spec.Nodes) {
		return nil, fmt.Errorf("--mpi=pmix: the step lists %d nodes and ranks for %d", len(spec.Nodes), len(spec.MPI.Ranks))
	}
	dir, err := os.MkdirTemp(job.RunDir, "pmix-")
	if err != nil {
		return nil, fmt.Errorf("--mpi=pmix: the server's directory: %w", err)
	}
	perNode := make([]string, len(spec.MPI.Ranks))
	for i, rs := range spec.MPI.Ranks {
		ids := make([]string, len(rs))
		for k, r := range rs {
			ids[k] = strconv.Itoa(r)
		}
		perNode[i] = strings.Join(ids, ",")
	}
	key := fmt.Sprintf("%s.%d", job.ID, spec.Step)
	cmd := exec.Command(helper,
		// Slurm's mpi/pmix names the namespace so.
		"--nspace", "slurm.pmix."+key, "--jobid", key,
		"--node", strconv.Itoa(spec.NodeIndex), "--hosts", strings.Join(spec.Nodes, ","),
		"--ranks", strings.Join(perNode, ";"), "--tmpdir", dir)
	n := &pmixNode{spec: spec, emit: emit, key: key, dir: dir, cmd: cmd, errs: &tailBuffer{max: 4096},
		env: map[int][]string{}, done: make(chan struct{})}
	cmd.Stderr = io.MultiWriter(os.Stderr, n.errs)
	if n.in, err = cmd.StdinPipe(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("--mpi=pmix: start %s: %w", helper, err)
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 64<<10), 256<<20) // a fence carries every rank's data
	if err := n.readSetup(lines); err != nil {
		n.in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(dir)
		return nil, err
	}
	pmiNodes.Lock()
	pmiNodes.m[key] = n
	pmiNodes.Unlock()
	go n.serve(lines)
	return n, nil
}

// readSetup reads the server's variables for each local rank, up to its
// "ready".
func (n *pmixNode) readSetup(lines *bufio.Scanner) error {
	for lines.Scan() {
		word, rest, _ := strings.Cut(lines.Text(), " ")
		switch word {
		case "ready":
			return nil
		case "error":
			return fmt.Errorf("--mpi=pmix: the PMIx server: %s", rest)
		case "env":
			r, kv, _ := strings.Cut(rest, " ")
			rank, err := strconv.Atoi(r)
			if err != nil || !strings.Contains(kv, "=") {
				return fmt.Errorf("--mpi=pmix: the PMIx server said %q", lines.Text())
			}
			n.env[rank] = append(n.env[rank], kv)
		}
	}
	_ = n.cmd.Wait()
	msg := strings.TrimSpace(n.errs.String())
	if strings.Contains(msg, "error while loading shared libraries") {
		return fmt.Errorf("--mpi=pmix: the job's image has no PMIx library (libpmix.so.2; Debian: libpmix2, which Open MPI's packages install): %s", msg)
	}
	return fmt.Errorf("--mpi=pmix: the PMIx server exited (%v) before it was ready: %s", n.cmd.ProcessState, msg)
}

// serve relays the server's fences and aborts until it exits.
func (n *pmixNode) serve(lines *bufio.Scanner) {
	defer close(n.done)
	for lines.Scan() {
		word, rest, _ := strings.Cut(lines.Text(), " ")
		switch word {
		case "fence":
			num, blob, _ := strings.Cut(rest, " ")
			fence, err := strconv.Atoi(num)
			n.mu.Lock()
			done := n.fence
			n.mu.Unlock()
			if err != nil || fence != done+1 {
				n.abort(fmt.Sprintf("PMIx server entered fence %q after %d", num, done))
				continue
			}
			n.emit(event{Task: -1, PMI: &pmiMsg{Node: n.spec.NodeIndex, Fence: fence,
				KVS: map[string]string{strconv.Itoa(n.spec.NodeIndex): blob}}})
		case "abort":
			f := strings.SplitN(rest, " ", 3)
			rank, _ := strconv.Atoi(f[0])
			a := pmiAbort{Rank: rank, Reason: "PMIx abort"}
			if len(f) > 1 {
				a.Code, _ = strconv.Atoi(f[1])
			}
			if len(f) > 2 && f[2] != "" && f[2] != "PMIx abort" && f[2] != "N/A" { // Open MPI says N/A
				a.Reason += " (" + f[2] + ")"
			}
			n.emitAbort(a)
		case "error":
			n.abort("PMIx server: " + rest)
		}
	}
	_ = n.cmd.Wait()
	n.mu.Lock()
	stopping := n.stopping
	n.mu.Unlock()
	if !stopping {
		// The ranks would wait for it in their next fence forever.
		n.abort(fmt.Sprintf("PMIx server exited (%v): %s", n.cmd.ProcessState, strings.TrimSpace(n.errs.String())))
	}
}

func (n *pmixNode) abort(reason string) {
	rank := -1
	if len(n.spec.Tasks) > 0 {
		rank = n.spec.Tasks[0].ProcID
	}
	n.emitAbort(pmiAbort{Rank: rank, Reason: reason})
}

func (n *pmixNode) emitAbort(a pmiAbort) {
	n.emit(event{Task: -1, PMI: &pmiMsg{Node: n.spec.NodeIndex, Abort: &a}})
}

// start starts task t with its rank's PMIx variables.
func (n *pmixNode) start(cmd *exec.Cmd, t TaskSlot) error {
	cmd.Env = append(cmd.Env, n.env[t.ProcID]...)
	if err := cmd.Start(); err != nil {
		// Its peers would wait for it in their first fence forever.
		n.emitAbort(pmiAbort{Rank: t.ProcID, Reason: "task could not start"})
		return err
	}
	return nil
}

// fenceDone hands the server every node's contribution, in node order.
func (n *pmixNode) fenceDone(fence int, kvs map[string]string) error {
	n.mu.Lock()
	if fence != n.fence+1 {
		n.mu.Unlock()
		return fmt.Errorf("fence %d: this node is at fence %d", fence, n.fence+1)
	}
	n.fence = fence
	n.mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "fenced %d ", fence)
	for i := range n.spec.Nodes {
		blob, ok := kvs[strconv.Itoa(i)]
		if !ok {
			return fmt.Errorf("fence %d: nothing from node %d", fence, i)
		}
		b.WriteString(blob)
	}
	b.WriteByte('\n')
	if _, err := n.in.Write(b.Bytes()); err != nil {
		return fmt.Errorf("fence %d: the PMIx server: %w", fence, err)
	}
	return nil
}

// stop ends the server: its stdin closes, it finalizes and exits.
func (n *pmixNode) stop() {
	n.mu.Lock()
	first := !n.stopping
	n.stopping = true
	n.mu.Unlock()
	if !first {
		return
	}
	pmiNodes.Lock()
	if pmiNodes.m[n.key] == stepPMI(n) {
		delete(pmiNodes.m, n.key)
	}
	pmiNodes.Unlock()
	n.in.Close()
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	os.RemoveAll(n.dir)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
