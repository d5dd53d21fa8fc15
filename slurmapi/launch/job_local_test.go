package launch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

const testKey = "0123456789abcdef0123456789abcdef"

// testCPUs are the CPUs of each node of a test job (one task per node, of
// this many CPUs): a step may run up to this many one-CPU tasks on a node;
// srun refuses more, as Slurm does.
const testCPUs = 4

// startJob builds the pods of a job of nodes nodes (gpus GPUs each)
// running script with the pod factory's own code and starts them as
// local processes; workDir is the job's submit directory.
func startJob(t *testing.T, nodes, gpus int, script, workDir string) []*launchtest.Node {
	t.Helper()
	return startLimitedJob(t, nodes, gpus, script, workDir, 0, "")
}

// startLimitedJob is startJob for a job with a time limit and a
// --signal (as sbatch.Signal writes it; "" for none), its pods made now.
func startLimitedJob(t *testing.T, nodes, gpus int, script, workDir string, limit time.Duration, signal string) []*launchtest.Node {
	t.Helper()
	d := &slurmapi.JobDesc{Name: "train", User: "alice", Account: "nlp", Script: script,
		Nodes: nodes, Tasks: nodes, CPUsPerTask: testCPUs, WorkDir: workDir, Stdout: "%x-%j.out", Stderr: "%x-%j.err"}
	d.Signal = signal
	pg := kube.PodGroupFor(d, 42)
	binds := make([]bridge.Bind, nodes)
	for i := range binds {
		binds[i].Node = fmt.Sprintf("node-%d", i)
		for g := range gpus {
			binds[i].GPUs = append(binds[i].GPUs, bridge.BoundGPU{Index: int32(g), UUID: fmt.Sprintf("GPU-%d-%d", i, g)})
		}
	}
	pods, err := kube.BuildPods(pg, binds, kube.RunAs{Image: "img", LauncherImage: "sluice:test", TimeLimit: limit, Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return launchtest.Start(t, pods, testKey)
}

// finish waits for every node; it returns the batch host's status and
// fails the test if another node did not end cleanly when told to.
func finish(t *testing.T, nodes []*launchtest.Node) int {
	t.Helper()
	rc := nodes[0].Wait()
	for i, n := range nodes[1:] {
		if got := n.Wait(); got != 0 {
			t.Errorf("node %d's launcher exited %d, want 0 after the batch host ended (stderr %q)", i+1, got, n.Stderr().All())
		}
	}
	return rc
}

func steps(t *testing.T, n *launchtest.Node) []accounting.Step {
	t.Helper()
	s, err := accounting.DecodeSteps(42, n.TerminationMessage())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTrainScriptRunsOnceAndSrunOncePerNode is examples/train.sh on a
// two-node allocation: the lines outside srun run once, on the batch
// host; srun starts exactly one task per node with the step's SLURM_*
// values and each node's own GPUs.
func TestTrainScriptRunsOnceAndSrunOncePerNode(t *testing.T) {
	script := `#!/bin/sh
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST ($SLURM_NNODES nodes)"
echo "GPUs: $CUDA_VISIBLE_DEVICES"
srun sh -c 'echo "task $SLURM_PROCID local $SLURM_LOCALID node $SLURM_NODEID of $SLURM_NTASKS on $SLURMD_NODENAME step $SLURM_STEP_ID nodes $SLURM_STEP_NODELIST gpus $CUDA_VISIBLE_DEVICES"'
`
	nodes := startJob(t, 2, 2, script, t.TempDir())
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	got := nodes[0].Stdout().All()
	slices.Sort(got)
	want := []string{
		"GPUs: 0,1",
		"job 42 on node-[0-1] (2 nodes)",
		"task 0 local 0 node 0 of 2 on node-0 step 0 nodes node-[0-1] gpus 0,1",
		"task 1 local 0 node 1 of 2 on node-1 step 0 nodes node-[0-1] gpus 0,1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("batch host's output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out := nodes[1].Stdout().All(); len(out) != 0 {
		t.Errorf("node 1 printed %q itself; its task's output belongs to srun", out)
	}
	st := steps(t, nodes[0])
	if len(st) != 2 || st[0].StepID != "batch" || st[0].State != accounting.StateCompleted ||
		st[1].StepID != "0" || st[1].State != accounting.StateCompleted || st[1].Tasks != 2 || st[1].NodeList != "node-[0-1]" {
		t.Errorf("step report %+v", st)
	}
}

// TestSrunLayouts: tasks, nodes and per-node counts place task ids in
// blocks as srun does, each with its local id and, with --gpus-per-task,
// its own GPUs; -l labels every line with its task.
func TestSrunLayouts(t *testing.T) {
	cases := []struct {
		args string
		want []string // sorted lines
	}{
		{"-l -n 4", []string{"0: 0 0 0 4 0,1,2,3", "1: 1 1 0 4 0,1,2,3", "2: 2 0 1 4 0,1,2,3", "3: 3 1 1 4 0,1,2,3"}},
		{"-l --ntasks-per-node=2 --gpus-per-task=2", []string{"0: 0 0 0 4 0,1", "1: 1 1 0 4 2,3", "2: 2 0 1 4 0,1", "3: 3 1 1 4 2,3"}},
		{"-N1 -l", []string{"0: 0 0 0 1 0,1,2,3"}},
		{"-n3 -l", []string{"0: 0 0 0 3 0,1,2,3", "1: 1 1 0 3 0,1,2,3", "2: 2 0 1 3 0,1,2,3"}},
		{"--ntasks=1", []string{"0 0 0 1 0,1,2,3"}},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			script := "#!/bin/sh\nsrun " + c.args + ` sh -c 'echo $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURM_NTASKS $CUDA_VISIBLE_DEVICES'` + "\n"
			nodes := startJob(t, 2, 4, script, t.TempDir())
			if rc := finish(t, nodes); rc != 0 {
				t.Fatalf("exit %d: %q", rc, nodes[0].Stderr().All())
			}
			got := nodes[0].Stdout().All()
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("srun %s:\n%s\nwant:\n%s", c.args, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestFailingTaskFailsItsStep: srun exits with the highest task status,
// names the failed tasks, and the script goes on; the step is FAILED in
// the report and the batch step has the script's own status.
func TestFailingTaskFailsItsStep(t *testing.T) {
	script := "#!/bin/sh\nsrun sh -c 'exit $((SLURM_PROCID + 2))'\necho srun=$?\nexit 5\n"
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if rc := finish(t, nodes); rc != 5 {
		t.Fatalf("batch host exited %d, want the script's 5", rc)
	}
	if got := nodes[0].Stdout().All(); !slices.Equal(got, []string{"srun=3"}) {
		t.Errorf("script output %q, want srun=3", got)
	}
	if !nodes[0].Stderr().WaitFor("srun: error: node-0: task 0: Exited with exit code 2", "srun: error: node-1: task 1: Exited with exit code 3") {
		t.Errorf("srun's errors: %q", nodes[0].Stderr().All())
	}
	st := steps(t, nodes[0])
	if len(st) != 2 || st[0].ExitCode != 5 || st[0].State != accounting.StateFailed || st[1].ExitCode != 3 || st[1].State != accounting.StateFailed {
		t.Errorf("step report %+v", st)
	}
}

// TestKillOnBadExit: with -K a failing task ends the step's other tasks
// (which would otherwise never end) as Slurm ends them: SIGTERM, which a
// task may trap to clean up (SIGKILL follows after KillWait); srun
// reports the failure and exits with the highest status.
func TestKillOnBadExit(t *testing.T) {
	script := "#!/bin/sh\nsrun -K sh -c 'trap \"echo term $SLURM_PROCID; exit 7\" TERM; [ $SLURM_PROCID = 1 ] && { sleep 1; exit 3; }; while :; do sleep 1; done'\necho srun=$?\n"
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	if got := nodes[0].Stdout().All(); !slices.Equal(got, []string{"term 0", "srun=7"}) {
		t.Errorf("script output %q, want task 0's trap of SIGTERM and srun=7", got)
	}
	host := hostsOf(nodes)
	if !nodes[0].Stderr().WaitFor("srun: error: "+host[0]+": task 0: Exited with exit code 7", "srun: error: "+host[1]+": task 1: Exited with exit code 3") {
		t.Errorf("srun's errors: %q", nodes[0].Stderr().All())
	}
	if st := steps(t, nodes[0]); len(st) != 2 || st[1].State != accounting.StateFailed {
		t.Errorf("step report %+v", st)
	}
}

// hostsOf are a test job's node names by node index, as its pods know them.
func hostsOf(nodes []*launchtest.Node) []string {
	for _, e := range nodes[0].Pod.Spec.Containers[0].Env {
		if e.Name == launch.EnvHosts {
			return strings.Split(e.Value, ",")
		}
	}
	return nil
}

// TestSrunOutputFiles: -o with %t writes one file per task on its node;
// without a per-task pattern srun writes every task into one file.
func TestSrunOutputFiles(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nsrun -o out-%j-%s-%t.txt sh -c 'echo hello $SLURM_PROCID'\nsrun -o all-%j.%s.txt -l sh -c 'echo hi'\n"
	nodes := startJob(t, 2, 0, script, dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("exit %d: %q", rc, nodes[0].Stderr().All())
	}
	for name, want := range map[string][]string{
		"out-42-0-0.txt": {"hello 0"}, "out-42-0-1.txt": {"hello 1"}, "all-42.1.txt": {"0: hi", "1: hi"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		got := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %q (%v), want %q", name, b, err, want)
		}
	}
}

// TestSignalReachesEveryTask: the pods being deleted (scancel, the time
// limit: the kubelets SIGTERM every pod, then SIGKILL after the grace
// period) pass SIGTERM to every task on every node exactly once, and the
// tasks keep their grace: a task still cleaning up after its srun's pod
// ended is not killed by its launcher. The steps and the batch step are
// CANCELLED in the report.
func TestSignalReachesEveryTask(t *testing.T) {
	script := "#!/bin/sh\nsrun sh -c 'trap \"echo term $SLURM_PROCID; sleep 1; echo bye $SLURM_PROCID; exit 0\" TERM; echo ready $SLURM_PROCID; while :; do sleep 1; done'\necho srun=$?\n"
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if !nodes[0].Stdout().WaitFor("ready 0", "ready 1") {
		t.Fatalf("tasks did not start: %q %q", nodes[0].Stdout().All(), nodes[0].Stderr().All())
	}
	done := make(chan struct{})
	go func() { launchtest.Delete(nodes, time.Minute); close(done) }()
	for _, n := range nodes {
		n.Wait()
	}
	<-done
	out := nodes[0].Stdout().All()
	for _, want := range []string{"term 0", "term 1", "bye 0", "bye 1"} {
		if c := count(out, want); c != 1 {
			t.Errorf("%q printed %d times, want once (output %q)", want, c, out)
		}
	}
	st := steps(t, nodes[0])
	if len(st) != 2 || st[0].StepID != "batch" || st[0].State != accounting.StateCancelled || st[1].State != accounting.StateCancelled {
		t.Errorf("step report %+v, want the batch step and step 0 CANCELLED", st)
	}
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// TestOneNodeJobNeedsNoKey: a one-node job runs srun's tasks locally,
// with no launch key and no listening launcher.
func TestOneNodeJobNeedsNoKey(t *testing.T) {
	nodes := startJob(t, 1, 0, "#!/bin/sh\nsrun -n2 -l sh -c 'echo $SLURM_PROCID'\n", t.TempDir())
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("exit %d: %q", rc, nodes[0].Stderr().All())
	}
	got := nodes[0].Stdout().All()
	slices.Sort(got)
	if !slices.Equal(got, []string{"0: 0", "1: 1"}) {
		t.Errorf("output %q", got)
	}
}

// TestSignalOneStep is scancel JOB.STEP and scancel --signal as the
// server sends them to the batch host: a signal other than TERM reaches
// every task and the step goes on; SIGKILL (scancel's default) ends every
// task through srun, which records the step CANCELLED, and the script
// goes on. A step that is not running is refused.
func TestSignalOneStep(t *testing.T) {
	script := "#!/bin/sh\nsrun sh -c 'trap \"echo usr1 $SLURM_PROCID\" USR1; trap \"echo term $SLURM_PROCID; exit 0\" TERM; echo ready $SLURM_PROCID; while :; do sleep 1; done'\necho srun=$?\n"
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if !nodes[0].Stdout().WaitFor("ready 0", "ready 1") {
		t.Fatalf("tasks did not start: %q %q", nodes[0].Stdout().All(), nodes[0].Stderr().All())
	}
	ctx := context.Background()
	if err := launch.SignalStep(ctx, nodes[0].Addr, []byte(testKey), 1, int(syscall.SIGUSR1)); err == nil {
		t.Errorf("signalling step 1, which does not run, succeeded")
	}
	if err := launch.SignalStep(ctx, nodes[0].Addr, []byte(testKey), 0, int(syscall.SIGUSR1)); err != nil {
		t.Fatal(err)
	}
	if !nodes[0].Stdout().WaitFor("usr1 0", "usr1 1") {
		t.Fatalf("not every task got SIGUSR1: %q", nodes[0].Stdout().All())
	}
	if err := launch.SignalStep(ctx, nodes[0].Addr, []byte(testKey), 0, int(syscall.SIGKILL)); err != nil {
		t.Fatal(err)
	}
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	if !nodes[0].Stdout().WaitFor("term 0", "term 1", "srun=0") {
		t.Errorf("the step did not end through its tasks: %q", nodes[0].Stdout().All())
	}
	if st := steps(t, nodes[0]); len(st) != 2 || st[1].State != accounting.StateCancelled {
		t.Errorf("step report %+v, want step 0 CANCELLED", st)
	}
}

// TestStepIDsAreJobWide: sruns started at once from tasks on both nodes
// (each pod with its own run directory) get distinct step ids, as
// slurmctld hands them out: the batch host allocates every one, and
// keeps every step, wherever its srun ran, for the report.
func TestStepIDsAreJobWide(t *testing.T) {
	script := "#!/bin/sh\nsrun -N2 --ntasks-per-node=4 sh -c 'srun -N1 -n1 sh -c \"echo step \\$SLURM_STEP_ID\"'\n"
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("exit %d: %q", rc, nodes[0].Stderr().All())
	}
	got := nodes[0].Stdout().All()
	slices.Sort(got)
	want := []string{"step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7", "step 8"}
	if !slices.Equal(got, want) {
		t.Errorf("inner steps printed %q, want %q (one id each)", got, want)
	}
	var ids []string
	for _, s := range steps(t, nodes[0]) {
		ids = append(ids, s.StepID)
		if s.State != accounting.StateCompleted {
			t.Errorf("step %s is %s, want COMPLETED", s.StepID, s.State)
		}
	}
	slices.Sort(ids)
	if want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "batch"}; !slices.Equal(ids, want) {
		t.Errorf("reported steps %q, want %q", ids, want)
	}
}

// TestSignalWarnsEverySteps: --signal=USR1@TIME reaches every task of
// the running steps on every node (through their sruns: one started by
// the script, one by a task on node 1) TIME seconds before the time
// limit, and not the batch shell, as Slurm sends it.
func TestSignalWarnsEveryStep(t *testing.T) {
	// Sent 4 s after the pods are made; each task says it is ready, so a
	// warning that came before would be seen to kill it.
	script := `#!/bin/sh
trap 'echo shell got it' USR1
srun -l sh -c 'trap "echo usr1; exit 0" USR1; echo ready; while :; do sleep 1; done' &
srun -n2 sh -c '[ $SLURM_NODEID = 1 ] && exec srun -n1 sh -c "trap \"echo nested usr1; exit 0\" USR1; echo nested ready; while :; do sleep 1; done"; exit 0' &
wait; wait
echo done
`
	nodes := startLimitedJob(t, 2, 0, script, t.TempDir(), time.Hour, "10@3596")
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	out := nodes[0].Stdout().All()
	for _, want := range []string{"0: ready", "1: ready", "nested ready", "0: usr1", "1: usr1", "done"} {
		if count(out, want) != 1 {
			t.Errorf("%q printed %d times, want once (output %q)", want, count(out, want), out)
		}
	}
	if !slices.Contains(out, "nested usr1") {
		t.Errorf("the step srun started on node 1 did not get the warning: %q", out)
	}
	if slices.Contains(out, "shell got it") {
		t.Errorf("the batch shell got the warning, which without B: goes only to the steps: %q", out)
	}
}

// TestSignalBatchShellOnly: --signal=B:USR1@TIME reaches only the batch
// shell: its trap ends the step it started, whose tasks never see USR1.
func TestSignalBatchShellOnly(t *testing.T) {
	script := `#!/bin/sh
srun sh -c 'trap "echo task got it" USR1; echo ready $SLURM_PROCID; while :; do sleep 1; done' &
pid=$!
trap 'echo shell got it; kill $pid' USR1
wait; wait
echo done
`
	nodes := startLimitedJob(t, 2, 0, script, t.TempDir(), time.Hour, "B:10@3596")
	finish(t, nodes)
	out := nodes[0].Stdout().All()
	for _, want := range []string{"ready 0", "ready 1", "shell got it", "done"} {
		if count(out, want) != 1 {
			t.Errorf("%q printed %d times, want once (output %q)", want, count(out, want), out)
		}
	}
	if slices.Contains(out, "task got it") {
		t.Errorf("a task got the warning meant for the batch shell only: %q", out)
	}
}

// TestSrunStdinGoesToTaskZero: srun's stdin reaches task 0 only (srun's
// default --input), with its end, whether task 0 runs on srun's node or
// (srun started on node 1) on another; the other tasks read nothing.
func TestSrunStdinGoesToTaskZero(t *testing.T) {
	script := `#!/bin/sh
printf 'a\nb\n' | srun -n2 -l sh -c 'cat; echo end'
srun -n2 sh -c '[ $SLURM_NODEID = 1 ] && printf "x\ny\n" | exec srun -n1 sh -c "cat; echo remote end"; exit 0'
`
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("exit %d: %q", rc, nodes[0].Stderr().All())
	}
	got := nodes[0].Stdout().All()
	slices.Sort(got)
	want := []string{"0: a", "0: b", "0: end", "1: end", "remote end", "x", "y"}
	if !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
}

// TestStepsWhileRunning: the batch host answers, signed, with the job's
// steps as they run: the batch step and a step RUNNING with their start,
// an ended step with its end and exit code; an unsigned ask is refused.
func TestStepsWhileRunning(t *testing.T) {
	script := "#!/bin/sh\nsrun -n2 sh -c 'exit 3'\nsrun sh -c 'echo ready $SLURM_PROCID; while :; do sleep 1; done'\n"
	nodes := startJob(t, 2, 0, script, t.TempDir())
	if !nodes[0].Stdout().WaitFor("ready 0", "ready 1") {
		t.Fatalf("tasks did not start: %q", nodes[0].Stderr().All())
	}
	ctx := context.Background()
	if _, err := launch.RunningSteps(ctx, nodes[0].Addr, []byte("another-key-0123456789abcdef0123"), 42); err == nil {
		t.Errorf("a request signed with another key got the steps")
	}
	st, err := launch.RunningSteps(ctx, nodes[0].Addr, []byte(testKey), 42)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]accounting.Step{}
	for _, s := range st {
		byID[s.StepID] = s
	}
	b, s0, s1 := byID["batch"], byID["0"], byID["1"]
	if len(st) != 3 || b.State != accounting.StateRunning || b.Start.IsZero() || !b.End.IsZero() ||
		s0.State != accounting.StateFailed || s0.ExitCode != 3 || s0.End.IsZero() ||
		s1.State != accounting.StateRunning || s1.Start.IsZero() || s1.Tasks != 2 {
		t.Errorf("steps while running: %+v", st)
	}
	if err := launch.SignalStep(ctx, nodes[0].Addr, []byte(testKey), 1, int(syscall.SIGKILL)); err != nil {
		t.Fatal(err)
	}
	finish(t, nodes)
}
