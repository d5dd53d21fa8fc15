package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// PMI: how an MPI program started by `srun --mpi=pmi2` finds its peers.
//
// Each node of such a step serves PMI to its own tasks, as slurmstepd's
// mpi/pmi2 plugin does: every task inherits one end of a socketpair (its
// number in PMI_FD) and speaks PMI-1 ("cmd=init pmi_version=1 ...", one
// line per command; Debian's MPICH) or PMI-2 (the same init line, then
// length-prefixed "cmd=fullinit;..." messages; Slurm's libpmi2, Intel
// MPI, MVAPICH) over it. The node keeps the step's key-value space; a
// fence (PMI-1 barrier_in, PMI-2 kvs-fence) crosses the nodes through
// srun, which started every node's part of the step: once all of a
// node's tasks have entered the fence, the node sends the keys they put
// since the last one to srun in its answer's frames (pmiMsg); srun waits
// for every node of the step, merges, and sends each node the merged keys
// (pathPMIFence, signed with the job's key like every launcher request; a
// node's tasks that srun runs itself get them in-process). Only then does
// each node answer its tasks' fence.

// MPI types of srun --mpi (Slurm's MpiDefault / SLURM_MPI_TYPE).
const (
	mpiNone = "none"
	mpiPMI2 = "pmi2"
	mpiPMIx = "pmix"
)

// mpiType checks srun's --mpi value ("" is none).
func mpiType(v string) (string, error) {
	switch {
	case v == "" || v == mpiNone:
		return mpiNone, nil
	case v == mpiPMI2:
		return mpiPMI2, nil
	case v == mpiPMIx || strings.HasPrefix(v, mpiPMIx+"_"):
		return mpiPMIx, nil
	}
	return "", fmt.Errorf("--mpi=%s: unknown MPI type (none, pmi2, pmix)", v)
}

// StepMPI is what each node of a step needs to serve PMI to its tasks.
type StepMPI struct {
	Type string `json:"type"` // mpiPMI2 or mpiPMIx
	// Mapping is PMI_process_mapping: which node runs each task.
	Mapping string `json:"mapping"`
	// Ranks are the tasks on each node of the step, in step node order
	// (PMIx's process map).
	Ranks [][]int `json:"ranks,omitempty"`
}

// processMapping is PMI_process_mapping for tasks on nodes nodeOf (by
// task id): "(vector,(first node,nodes,tasks per node),...)", each
// triple the next tasks in order, the given number on each of those
// nodes. MPICH reads it to tell which ranks share a node, and starts
// over at the first triple when the vector ends before the tasks do: a
// vector that repeats from node 0 (a cyclic layout's) is written once.
func processMapping(nodeOf []int) string {
	type triple struct{ start, nodes, size int }
	var ts []triple
	for r := 0; r < len(nodeOf); {
		start, size := nodeOf[r], 1
		for r+size < len(nodeOf) && nodeOf[r+size] == start {
			size++
		}
		r += size
		nodes := 1
		for r+size <= len(nodeOf) && sameNode(nodeOf[r:r+size], start+nodes) {
			r += size
			nodes++
		}
		ts = append(ts, triple{start, nodes, size})
	}
	period := len(ts)
	if len(ts) > 0 && ts[0].start == 0 {
	periods:
		for p := 1; p < len(ts); p++ {
			// Does MPICH, repeating ts[:p], place every task where it is?
			r := 0
			for {
				for _, x := range ts[:p] {
					for node := x.start; node < x.start+x.nodes; node++ {
						for range x.size {
							if nodeOf[r] != node {
								continue periods
							}
							if r++; r == len(nodeOf) {
								period = p
								break periods
							}
						}
					}
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString("(vector")
	for _, x := range ts[:period] {
		fmt.Fprintf(&b, ",(%d,%d,%d)", x.start, x.nodes, x.size)
	}
	b.WriteString(")")
	return b.String()
}

func sameNode(nodes []int, node int) bool {
	for _, n := range nodes {
		if n != node {
			return false
		}
	}
	return true
}

// pmiMsg is a node's PMI news for srun, a field of its answer's frames.
type pmiMsg struct {
	Node int `json:"node"` // the node's index within the step
	// Fence: the node's tasks have all entered fence number Fence; KVS
	// is what they put since the one before.
	Fence int               `json:"fence,omitempty"`
	KVS   map[string]string `json:"kvs,omitempty"`
	// Abort: a task called PMI abort, lost its PMI connection before
	// finalizing, or could not start; the step ends.
	Abort *pmiAbort `json:"abort,omitempty"`
}

type pmiAbort struct {
	Rank   int    `json:"rank"`
	Code   int    `json:"code,omitempty"`
	Reason string `json:"reason"`
}

// pmiFenceDone is srun's answer to a fence: every node's keys.
type pmiFenceDone struct {
	JobID string            `json:"job_id"`
	Step  int               `json:"step"`
	Fence int               `json:"fence"`
	KVS   map[string]string `json:"kvs"`
	Nonce string            `json:"nonce"`
}

// Limits the server announces (PMI-1 get_maxes), Slurm's and hydra's.
const (
	pmiKVSNameMax = 256
	pmiKeyMax     = 64
	pmiValueMax   = 1024
)

// pmiNode serves PMI to one node's tasks of a step.
type pmiNode struct {
	spec    StepSpec
	emit    func(event)
	kvsName string // the step's KVS and PMI job id: JOB.STEP
	mapping string
	size    int

	mu        sync.Mutex
	kvs       map[string]string // every key this node knows
	pending   map[string]string // keys put here since the last fence
	nodeAttrs map[string]string // PMI-2 info-putnodeattr
	attrWait  map[string][]func(string)
	fence     int         // fences this node has completed
	waiting   []fenceWait // tasks in the current fence
	live      int         // tasks whose PMI connection is open
	listed    bool        // in pmiNodes
	aborted   bool
}

type fenceWait struct {
	c     *pmiConn
	thrid string
}

// The nodes a process serves, by JOB.STEP: srun's answer to a fence
// (pathPMIFence) finds its node here, even while the step is starting.
var pmiNodes = struct {
	sync.Mutex
	m map[string]stepPMI
}{m: map[string]stepPMI{}}

// stepPMI serves PMI-1/2 (pmiNode) or PMIx (pmixNode) to a node's tasks
// of a step.
type stepPMI interface {
	// start starts a task with what it needs to reach the server.
	start(cmd *exec.Cmd, t TaskSlot) error
	// fenceDone takes srun's merged keys for fence number fence and lets
	// the node's tasks out of it.
	fenceDone(fence int, kvs map[string]string) error
	// stop ends the server once the node's tasks have all exited.
	stop()
}

// startStepPMI is the node's server for spec's MPI type; a nil *pmiNode
// (which starts tasks as they are) for none.
func startStepPMI(job *Job, spec StepSpec, emit func(event)) (stepPMI, error) {
	if spec.MPI != nil && spec.MPI.Type == mpiPMIx {
		return startPMIx(job, spec, emit)
	}
	return startPMI(job, spec, emit)
}

// startPMI is the node's PMI server for spec's tasks, or nil for a step
// without PMI (every method of a nil *pmiNode does nothing).
func startPMI(job *Job, spec StepSpec, emit func(event)) (*pmiNode, error) {
	if spec.MPI == nil || spec.MPI.Type == mpiNone || spec.MPI.Type == "" {
		return nil, nil
	}
	if spec.MPI.Type != mpiPMI2 {
		return nil, fmt.Errorf("MPI type %q: this launcher serves pmi2 and pmix", spec.MPI.Type)
	}
	n := &pmiNode{spec: spec, emit: emit, kvsName: fmt.Sprintf("%s.%d", job.ID, spec.Step),
		mapping: spec.MPI.Mapping, size: spec.NTasks,
		kvs: map[string]string{}, pending: map[string]string{}, nodeAttrs: map[string]string{},
		attrWait: map[string][]func(string){}}
	// As Slurm's plugin does, the mapping is in the KVS too: PMI-1 has
	// no job attributes and MPICH reads it with a get.
	n.kvs["PMI_process_mapping"] = n.mapping
	return n, nil
}

// start starts cmd, task t's command, with its end of a new socketpair
// and the PMI variables, and serves PMI on the other end. Without PMI it
// is cmd.Start.
func (n *pmiNode) start(cmd *exec.Cmd, t TaskSlot) error {
	if n == nil {
		return cmd.Start()
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		n.abort(pmiAbort{Rank: t.ProcID, Reason: "task could not start"})
		return fmt.Errorf("PMI socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), fmt.Sprintf("pmi-%d", t.ProcID))
	theirs := os.NewFile(uintptr(fds[1]), fmt.Sprintf("pmi-task-%d", t.ProcID))
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	cmd.Env = append(cmd.Env, pmiEnv(n.kvsName, t.ProcID, n.size, fd)...)
	err = cmd.Start()
	theirs.Close() // the task has its own copy
	if err != nil {
		ours.Close()
		// Its peers would wait for it in their first fence forever.
		n.abort(pmiAbort{Rank: t.ProcID, Reason: "task could not start"})
		return err
	}
	n.mu.Lock()
	n.live++
	n.mu.Unlock()
	go (&pmiConn{n: n, rank: t.ProcID, f: ours}).serve()
	return nil
}

// pmiEnv are the variables a task of a PMI step gets, as from Slurm's
// mpi/pmi2 plugin (PMI_SPAWNED and PMI_APPNUM as hydra gives them to a
// job that was not spawned).
func pmiEnv(kvsName string, rank, size, fd int) []string {
	return []string{
		"PMI_FD=" + strconv.Itoa(fd),
		"PMI_RANK=" + strconv.Itoa(rank),
		"PMI_SIZE=" + strconv.Itoa(size),
		"PMI_JOBID=" + kvsName,
		"PMI_SPAWNED=0",
		"PMI_APPNUM=0",
	}
}

// put records a key a task put.
func (n *pmiNode) put(key, value string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kvs[key] = value
	n.pending[key] = value
}

func (n *pmiNode) get(key string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.kvs[key]
	return v, ok
}

// enterFence adds a task to the current fence; once all the node's tasks
// are in, the node's keys go to srun.
func (n *pmiNode) enterFence(w fenceWait) {
	n.mu.Lock()
	if n.aborted {
		n.mu.Unlock()
		return // the step is ending: the task waits for its signal
	}
	n.waiting = append(n.waiting, w)
	if len(n.waiting) < len(n.spec.Tasks) {
		n.mu.Unlock()
		return
	}
	kvs := n.pending
	n.pending = map[string]string{}
	if !n.listed {
		// srun's answer to the fence finds the node here.
		n.listed = true
		pmiNodes.Lock()
		pmiNodes.m[n.kvsName] = n
		pmiNodes.Unlock()
	}
	msg := &pmiMsg{Node: n.spec.NodeIndex, Fence: n.fence + 1, KVS: kvs}
	n.mu.Unlock()
	n.emit(event{Task: -1, PMI: msg})
}

// fenceDone takes srun's merged keys for fence number fence and lets the
// node's tasks out of it.
func (n *pmiNode) fenceDone(fence int, kvs map[string]string) error {
	n.mu.Lock()
	if fence != n.fence+1 || len(n.waiting) < len(n.spec.Tasks) {
		n.mu.Unlock()
		return fmt.Errorf("fence %d: this node is at fence %d with %d of %d tasks in", fence, n.fence+1, len(n.waiting), len(n.spec.Tasks))
	}
	for k, v := range kvs {
		n.kvs[k] = v
	}
	n.fence = fence
	waiting := n.waiting
	n.waiting = nil
	n.mu.Unlock()
	for _, w := range waiting {
		if w.c.version == 2 {
			w.c.send2(w.thrid, "kvs-fence-response", "rc", "0")
		} else {
			w.c.send1("barrier_out", "rc", "0")
		}
	}
	return nil
}

// abort ends the step: srun kills every task of it.
func (n *pmiNode) abort(a pmiAbort) {
	n.mu.Lock()
	first := !n.aborted
	n.aborted = true
	n.mu.Unlock()
	if first {
		n.emit(event{Task: -1, PMI: &pmiMsg{Node: n.spec.NodeIndex, Abort: &a}})
	}
}

// putNodeAttr and getNodeAttr are PMI-2's node attributes, shared by the
// node's tasks only; a get may wait for the put.
func (n *pmiNode) putNodeAttr(key, value string) {
	n.mu.Lock()
	n.nodeAttrs[key] = value
	waiters := n.attrWait[key]
	delete(n.attrWait, key)
	n.mu.Unlock()
	for _, w := range waiters {
		w(value)
	}
}

func (n *pmiNode) getNodeAttr(key string, wait bool, answer func(v string, found bool)) {
	n.mu.Lock()
	v, ok := n.nodeAttrs[key]
	if !ok && wait {
		n.attrWait[key] = append(n.attrWait[key], func(v string) { answer(v, true) })
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	answer(v, ok)
}

// taskGone notes that a task's PMI connection closed; when none is
// open, the node leaves pmiNodes.
func (n *pmiNode) taskGone() {
	n.mu.Lock()
	n.live--
	unlist := n.live == 0 && n.listed
	if unlist {
		n.listed = false
	}
	n.mu.Unlock()
	if unlist {
		pmiNodes.Lock()
		if pmiNodes.m[n.kvsName] == n {
			delete(pmiNodes.m, n.kvsName)
		}
		pmiNodes.Unlock()
	}
}

// jobAttr is a PMI-2 job attribute.
func (n *pmiNode) jobAttr(key string) (string, bool) {
	switch key {
	case "PMI_process_mapping":
		return n.mapping, true
	case "universeSize":
		return strconv.Itoa(n.size), true
	}
	return "", false
}

// stop: a PMI-1/2 node leaves pmiNodes when its tasks' connections close.
func (n *pmiNode) stop() {}

// pmiNodeFor is the node this process serves for job's step.
func pmiNodeFor(job string, step int) stepPMI {
	pmiNodes.Lock()
	defer pmiNodes.Unlock()
	return pmiNodes.m[fmt.Sprintf("%s.%d", job, step)]
}
