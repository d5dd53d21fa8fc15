package launch

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcessMapping(t *testing.T) {
	for _, c := range []struct {
		nodeOf []int // by task
		want   string
	}{
		{[]int{0, 1}, "(vector,(0,2,1))"},
		{[]int{0, 0, 1, 1}, "(vector,(0,2,2))"},
		{[]int{0, 0, 1}, "(vector,(0,1,2),(1,1,1))"},
		{[]int{0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4}, "(vector,(0,2,3),(2,3,2))"},
		{[]int{0, 0, 0, 0}, "(vector,(0,1,4))"},
		{[]int{0, 1, 1, 1}, "(vector,(0,2,1),(1,1,2))"},
		// cyclic: one period, which MPICH repeats
		{[]int{0, 1, 0, 1, 0, 1}, "(vector,(0,2,1))"},
		{[]int{0, 1, 2, 0, 1}, "(vector,(0,3,1))"},
		{[]int{0, 1, 0, 1, 1}, "(vector,(0,2,1),(0,2,1),(1,1,1))"},
		{[]int{1, 0}, "(vector,(1,1,1),(0,1,1))"},
	} {
		if got := processMapping(c.nodeOf); got != c.want {
			t.Errorf("processMapping(%v) = %s, want %s", c.nodeOf, got, c.want)
		}
	}
}

func TestMPIType(t *testing.T) {
	for v, want := range map[string]string{"": mpiNone, "none": mpiNone, "pmi2": mpiPMI2, "pmix": mpiPMIx, "pmix_v4": mpiPMIx} {
		if got, err := mpiType(v); err != nil || got != want {
			t.Errorf("mpiType(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	for _, v := range []string{"openmpi", "pmi1"} {
		if _, err := mpiType(v); err == nil || !strings.Contains(err.Error(), "none, pmi2, pmix") {
			t.Errorf("mpiType(%q): %v, want the known types named", v, err)
		}
	}
}

func TestParse2(t *testing.T) {
	kv, err := parse2("cmd=kvs-put;key=a;value=x;;y;;;empty=;last=z")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cmd": "kvs-put", "key": "a", "value": "x;y;", "empty": "", "last": "z"}
	if fmt.Sprint(kv) != fmt.Sprint(want) {
		t.Errorf("parse2 = %v, want %v", kv, want)
	}
	if _, err := parse2("cmd=x;junk;"); err == nil {
		t.Error("a pair without = was accepted")
	}
}

// testPMINode is a node of a step of counts tasks per node (this node's
// index node), its emitted messages on a channel.
func testPMINode(t *testing.T, counts []int, node int) (*pmiNode, chan *pmiMsg) {
	t.Helper()
	var nodeOf []int
	first := 0
	for i, c := range counts {
		if i < node {
			first += c
		}
		for range c {
			nodeOf = append(nodeOf, i)
		}
	}
	spec := StepSpec{JobID: "7", Step: 3, NodeIndex: node, NTasks: len(nodeOf),
		MPI: &StepMPI{Type: mpiPMI2, Mapping: processMapping(nodeOf)}}
	for l := range counts[node] {
		spec.Tasks = append(spec.Tasks, TaskSlot{ProcID: first + l, LocalID: l})
	}
	msgs := make(chan *pmiMsg, 16)
	n, err := startPMI(&Job{ID: "7"}, spec, func(e event) { msgs <- e.PMI })
	if err != nil {
		t.Fatal(err)
	}
	return n, msgs
}

// pmiClient is a task's end of its PMI connection.
type pmiClient struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func connectPMI(t *testing.T, n *pmiNode, rank int) *pmiClient {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.live++
	n.mu.Unlock()
	go (&pmiConn{n: n, rank: rank, f: os.NewFile(uintptr(fds[0]), "pmi")}).serve()
	f := os.NewFile(uintptr(fds[1]), "task")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &pmiClient{t: t, c: c, r: bufio.NewReader(c)}
}

// line sends a PMI-1 line and reads the answer's line.
func (p *pmiClient) line(req string) string {
	p.t.Helper()
	p.send1(req)
	return p.read1()
}

func (p *pmiClient) send1(req string) {
	p.t.Helper()
	if _, err := io.WriteString(p.c, req+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pmiClient) read1() string {
	p.t.Helper()
	l, err := p.r.ReadString('\n')
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return strings.TrimSuffix(l, "\n")
}

// cmd2 sends a PMI-2 message and reads the answer's.
func (p *pmiClient) cmd2(req string) string {
	p.t.Helper()
	p.send2(req)
	return p.read2()
}

func (p *pmiClient) send2(req string) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.c, "%-6d%s", len(req), req); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pmiClient) read2() string {
	p.t.Helper()
	var head [6]byte
	if _, err := io.ReadFull(p.r, head[:]); err != nil {
		p.t.Fatalf("read: %v", err)
	}
	size, err := strconv.Atoi(strings.TrimSpace(string(head[:])))
	if err != nil {
		p.t.Fatalf("length %q", head)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(p.r, b); err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return string(b)
}

func TestPMI1Conversation(t *testing.T) {
	n, msgs := testPMINode(t, []int{2, 1}, 0)
	a, b := connectPMI(t, n, 0), connectPMI(t, n, 1)
	for _, c := range []struct{ req, want string }{
		{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"},
		{"cmd=get_maxes", "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024"},
		{"cmd=get_my_kvsname", "cmd=my_kvsname rc=0 kvsname=7.3"},
		{"cmd=get_universe_size", "cmd=universe_size rc=0 size=3"},
		{"cmd=get_appnum", "cmd=appnum rc=0 appnum=0"},
		{"cmd=get kvsname=7.3 key=PMI_process_mapping", "cmd=get_result rc=0 value=(vector,(0,1,2),(1,1,1))"},
		{"cmd=put kvsname=7.3 key=addr-0 value=aa", "cmd=put_result rc=0"},
	} {
		if got := a.line(c.req); got != c.want {
			t.Errorf("%s: got %q, want %q", c.req, got, c.want)
		}
	}
	b.line("cmd=init pmi_version=1 pmi_subversion=1")
	b.line("cmd=put kvsname=7.3 key=addr-1 value=bb")
	a.send1("cmd=barrier_in")
	select {
	case m := <-msgs:
		t.Fatalf("the node sent %+v before all its tasks were in the fence", m)
	case <-time.After(50 * time.Millisecond):
	}
	b.send1("cmd=barrier_in")
	m := <-msgs
	if m.Fence != 1 || m.Node != 0 || fmt.Sprint(m.KVS) != "map[addr-0:aa addr-1:bb]" {
		t.Fatalf("fence message %+v", m)
	}
	// The other node's keys come back from srun with this node's.
	if err := n.fenceDone(1, map[string]string{"addr-0": "aa", "addr-1": "bb", "addr-2": "cc"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*pmiClient{a, b} {
		if got := c.read1(); got != "cmd=barrier_out rc=0" {
			t.Errorf("fence answer %q", got)
		}
	}
	if got := b.line("cmd=get kvsname=7.3 key=addr-2"); got != "cmd=get_result rc=0 value=cc" {
		t.Errorf("get after the fence: %q", got)
	}
	if got := b.line("cmd=get kvsname=7.3 key=nope"); !strings.HasPrefix(got, "cmd=get_result rc=-1") {
		t.Errorf("get of a missing key: %q", got)
	}
	if err := n.fenceDone(1, nil); err == nil {
		t.Error("a fence answered twice was accepted")
	}
	if got := a.line("cmd=finalize"); got != "cmd=finalize_ack rc=0" {
		t.Errorf("finalize: %q", got)
	}
	if got := b.line("cmd=finalize"); got != "cmd=finalize_ack rc=0" {
		t.Errorf("finalize: %q", got)
	}
	select {
	case m := <-msgs:
		t.Errorf("finalized tasks sent %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestPMI2Conversation(t *testing.T) {
	n, msgs := testPMINode(t, []int{1, 1}, 1)
	c := connectPMI(t, n, 1)
	if got := c.line("cmd=init pmi_version=2 pmi_subversion=0"); got != "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0" {
		t.Fatalf("init: %q", got)
	}
	for _, x := range []struct{ req, want string }{
		{"cmd=fullinit;pmijobid=7.3;pmirank=1;threaded=FALSE;",
			"cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=2;appnum=0;debugged=FALSE;pmiverbose=FALSE;"},
		{"cmd=job-getid;thrid=0x1;", "cmd=job-getid-response;thrid=0x1;rc=0;jobid=7.3;"},
		{"cmd=info-getjobattr;key=PMI_process_mapping;", "cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,2,1));"},
		{"cmd=info-getjobattr;key=universeSize;", "cmd=info-getjobattr-response;rc=0;found=TRUE;value=2;"},
		{"cmd=info-getjobattr;key=other;", "cmd=info-getjobattr-response;rc=0;found=FALSE;"},
		{"cmd=info-putnodeattr;key=shm;value=seg;;1;", "cmd=info-putnodeattr-response;rc=0;"},
		{"cmd=info-getnodeattr;key=shm;wait=FALSE;", "cmd=info-getnodeattr-response;rc=0;found=TRUE;value=seg;;1;"},
		{"cmd=info-getnodeattr;key=none;wait=FALSE;", "cmd=info-getnodeattr-response;rc=0;found=FALSE;"},
		{"cmd=kvs-put;key=k1;value=v;;1;", "cmd=kvs-put-response;rc=0;"},
		{"cmd=spawn;ncmds=1;", "cmd=spawn-response;rc=-1;errmsg=Sluice's PMI does not support spawn;"},
	} {
		if got := c.cmd2(x.req); got != x.want {
			t.Errorf("%s:\n got %q\nwant %q", x.req, got, x.want)
		}
	}
	c.send2("cmd=kvs-fence;thrid=0x2;")
	m := <-msgs
	if m.Fence != 1 || m.Node != 1 || fmt.Sprint(m.KVS) != "map[k1:v;1]" {
		t.Fatalf("fence message %+v", m)
	}
	if err := n.fenceDone(1, map[string]string{"k0": "v0", "k1": "v;1"}); err != nil {
		t.Fatal(err)
	}
	if got := c.read2(); got != "cmd=kvs-fence-response;thrid=0x2;rc=0;" {
		t.Errorf("fence answer %q", got)
	}
	if got := c.cmd2("cmd=kvs-get;jobid=7.3;srcid=0;key=k0;"); got != "cmd=kvs-get-response;rc=0;found=TRUE;value=v0;" {
		t.Errorf("kvs-get: %q", got)
	}
	if got := c.cmd2("cmd=finalize;"); got != "cmd=finalize-response;rc=0;" {
		t.Errorf("finalize: %q", got)
	}
}

// A task that ends after PMI init without finalizing, or calls abort,
// ends the step; one that never spoke PMI does not.
func TestPMIAbort(t *testing.T) {
	n, msgs := testPMINode(t, []int{3}, 0)
	quiet := connectPMI(t, n, 0)
	quiet.c.Close()
	select {
	case m := <-msgs:
		t.Fatalf("a task that never used PMI aborted the step: %+v", m.Abort)
	case <-time.After(50 * time.Millisecond):
	}
	lost := connectPMI(t, n, 1)
	lost.line("cmd=init pmi_version=1 pmi_subversion=1")
	lost.c.Close()
	m := <-msgs
	if m.Abort == nil || m.Abort.Rank != 1 || !strings.Contains(m.Abort.Reason, "finalize") {
		t.Fatalf("lost task: %+v", m)
	}

	n, msgs = testPMINode(t, []int{1}, 0)
	c := connectPMI(t, n, 0)
	c.line("cmd=init pmi_version=1 pmi_subversion=1")
	c.send1("cmd=abort exitcode=3")
	m = <-msgs
	if m.Abort == nil || m.Abort.Rank != 0 || m.Abort.Code != 3 {
		t.Fatalf("abort: %+v", m)
	}
	if _, err := c.r.ReadString('\n'); err != io.EOF {
		t.Errorf("after abort the connection should close (the task then exits): %v", err)
	}
}
