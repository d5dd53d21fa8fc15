package launch

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

var updateDoc = flag.Bool("update", false, "rewrite the generated option tables of docs/srun.md")

// slurmOption is one line of testdata/{srun,salloc}-options.txt.
type slurmOption struct {
	long, arg, since string
	short            byte
}

func readOptions(t *testing.T, name string) []slurmOption {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []slurmOption
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("%s: bad line %q", name, line)
		}
		o := slurmOption{long: fs[0], arg: fs[2], since: fs[3]}
		if fs[1] != "-" {
			o.short = fs[1][0]
		}
		out = append(out, o)
	}
	if len(out) < 80 {
		t.Fatalf("%s lists only %d options", name, len(out))
	}
	return out
}

// sample is a value each option accepts, where "1" is not one.
var sample = map[string]string{
	"distribution": "cyclic", "nodelist": "job-42-0", "exclude": "job-42-1", "mpi": "pmi2", "input": "none",
	"open-mode": "append", "gres": "gpu:1", "gpus": "1", "gpus-per-node": "1", "het-group": "0", "jobid": "42",
	"signal": "USR1@60", "time": "10", "export": "ALL", "dependency": "afterok:1", "begin": "now",
	"constraint": "h100", "mem": "1G", "mem-per-cpu": "1G", "mem-per-gpu": "1G", "tres-per-task": "gres/gpu:1",
	"nodefile": "testdata/hosts", "array": "1-2", "switches": "1", "nice": "1", "kill-command": "TERM",
	"exclusive": "user", "partition": "h100", "account": "nlp", "qos": "normal", "container-image": "img",
	"relative": "0", "chdir": ".", "cpu-bind": "cores",
}

func sampleArgs(o slurmOption, short bool) []string {
	v := sample[o.long]
	if v == "" {
		v = "1"
	}
	if short {
		switch o.arg {
		case "required":
			return []string{"-" + string(o.short), v}
		case "optional":
			return []string{"-" + string(o.short) + v}
		}
		return []string{"-" + string(o.short)}
	}
	switch o.arg {
	case "required":
		return []string{"--" + o.long + "=" + v}
	case "optional":
		return []string{"--" + o.long}
	}
	return []string{"--" + o.long}
}

// TestSrunOptionsCoverSlurm: every option of Slurm's srun list has one
// row of srunTable, with its short letter and value kind, and parses
// (long and short) to a rule: never "unrecognized"; a warned or refused
// row says why. Every row but pyxis's is an option of Slurm's list.
func TestSrunOptionsCoverSlurm(t *testing.T) {
	listed := map[string]bool{}
	kinds := map[string]srunArg{"none": noArg, "required": reqArg, "optional": optArg}
	getenv := func(string) string { return "" }
	for _, want := range readOptions(t, "srun-options.txt") {
		listed[want.long] = true
		var row *srunOpt
		for i := range srunTable {
			if srunTable[i].long == want.long {
				if row != nil {
					t.Errorf("--%s has two rows", want.long)
				}
				row = &srunTable[i]
			}
		}
		if row == nil {
			t.Errorf("--%s (Slurm %s) has no rule", want.long, want.since)
			continue
		}
		if row.short != want.short || row.arg != kinds[want.arg] {
			t.Errorf("--%s: short %q value %d, Slurm's %q %s", want.long, row.short, row.arg, want.short, want.arg)
		}
		if (want.since == "22.05") != (row.since == "") {
			t.Errorf("--%s: since %q, Slurm's list says %s", want.long, row.since, want.since)
		}
		if row.note == "" {
			t.Errorf("--%s is %s without saying what Sluice does", want.long, row.support)
		}
		forms := [][]string{sampleArgs(want, false)}
		if want.short != 0 {
			forms = append(forms, sampleArgs(want, true))
		}
		for _, args := range forms {
			_, _, err := parseSrun(append(args, "true"), getenv)
			var u usageError
			if errors.As(err, &u) {
				t.Errorf("srun %s: %v", strings.Join(args, " "), err)
			}
			if row.support == slurmapi.Refused && row.apply == nil && err == nil {
				t.Errorf("srun %s: accepted, want refused", strings.Join(args, " "))
			}
		}
	}
	for _, r := range srunTable {
		if r.since != "pyxis" && !listed[r.long] {
			t.Errorf("--%s has a row but is not in Slurm's list (testdata/srun-options.txt)", r.long)
		}
	}
}

// TestSallocOptionsCoverSlurm: every option of Slurm's salloc list has a
// rule (salloc's own or sbatch's) with its short letter and value kind,
// and parses to it: never "unrecognized".
func TestSallocOptionsCoverSlurm(t *testing.T) {
	kinds := map[string]sbatch.ArgKind{"none": sbatch.NoArg, "required": sbatch.RequiredArg, "optional": sbatch.OptionalArg}
	listed := map[string]bool{}
	for _, want := range readOptions(t, "salloc-options.txt") {
		listed[want.long] = true
		rule, arg, short, note, ok := sbatch.SallocRule(want.long)
		if !ok {
			t.Errorf("salloc --%s (Slurm %s) has no rule", want.long, want.since)
			continue
		}
		if short != want.short || (rule != sbatch.RuleRefused && arg != kinds[want.arg]) {
			t.Errorf("salloc --%s: short %q value %d, Slurm's %q %s", want.long, short, arg, want.short, want.arg)
		}
		if rule != sbatch.RuleHonoured && note == "" {
			t.Errorf("salloc --%s is %s without saying why", want.long, rule)
		}
		forms := [][]string{sampleArgs(want, false)}
		if want.short != 0 {
			forms = append(forms, sampleArgs(want, true))
		}
		for _, args := range forms {
			_, _, _, _, err := sbatch.ParseSalloc(append(args, "bash"))
			if err != nil && (strings.Contains(err.Error(), "unrecognized") || strings.Contains(err.Error(), "invalid option") || strings.Contains(err.Error(), "ambiguous")) {
				t.Errorf("salloc %s: %v", strings.Join(args, " "), err)
			}
			if (err != nil) != (rule == sbatch.RuleRefused) {
				t.Errorf("salloc %s: err %v, rule %s", strings.Join(args, " "), err, rule)
			}
		}
	}
	for _, r := range sbatch.Salloc {
		if r.Long != "container-image" && !listed[r.Long] {
			t.Errorf("salloc --%s has a row but is not in Slurm's list (testdata/salloc-options.txt)", r.Long)
		}
	}
}

// TestSrunOptionsDoc: the option tables of docs/srun.md are the code's;
// -update rewrites them.
func TestSrunOptionsDoc(t *testing.T) {
	const path = "../../docs/srun.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, sec := range []struct{ begin, end, want string }{
		{srunDocBegin, srunDocEnd, srunOptionsMarkdown()},
		{sallocDocBegin, sallocDocEnd, sallocOptionsMarkdown()},
	} {
		before, rest, ok1 := strings.Cut(doc, sec.begin+"\n")
		current, after, ok2 := strings.Cut(rest, sec.end)
		if !ok1 || !ok2 {
			t.Fatalf("%s lacks the markers %q ... %q", path, sec.begin, sec.end)
		}
		if current == sec.want {
			continue
		}
		if !*updateDoc {
			t.Errorf("%s's generated option table (%s) differs from the code; run go test ./slurmapi/launch -run TestSrunOptionsDoc -update", path, sec.begin)
			continue
		}
		doc = before + sec.begin + "\n" + sec.want + sec.end + after
	}
	if *updateDoc && doc != string(raw) {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSrunOptionRules: what srun says and does for an option: its
// warning, Slurm's refusal, or the step it plans, on a job of two nodes
// with 4 CPUs, 2 GPUs and 8 GiB each and two tasks.
func TestSrunOptionRules(t *testing.T) {
	env := map[string]string{"SLURM_JOB_PARTITION": "h100", "SLURM_JOB_ACCOUNT": "nlp"}
	getenv := func(k string) string { return env[k] }
	job := &Job{ID: "42", Hosts: []string{"job-42-0", "job-42-1"}, JobTasks: 2}
	alloc := allocation{cpus: []int{4, 4}, gpus: 2, gpusOK: true, memMiB: 8192}
	cases := []struct {
		args  string
		warn  string // a warning that must be given ("" none at all)
		err   string // the refusal
		nodes []int  // the step's nodes
		tasks [][]int
		check func(o *srunOptions) bool
	}{
		{args: "--unbuffered --output out_%j_%t_log.out --error err_%j_%t_log.err", nodes: []int{0, 1}, tasks: [][]int{{0}, {1}},
			check: func(o *srunOptions) bool {
				return o.output == "out_%j_%t_log.out" && o.errorFile == "err_%j_%t_log.err"
			}},
		{args: "--cpu-bind=cores", warn: "--cpu-bind=cores: Sluice does not bind tasks to CPUs; the container's cgroup limits them"},
		{args: "--exact", warn: "--exact: Sluice's steps share the job's allocation"},
		{args: "--exclusive --overlap", err: "--exclusive and --overlap are mutually exclusive"},
		{args: "-p h100 -A nlp", nodes: []int{0, 1}},
		{args: "-p a100", warn: "--partition=a100: applies to job allocations"},
		{args: "--bogus", err: "unrecognized option '--bogus'"},
		{args: "--no", err: "option '--no' is ambiguous"},
		{args: "-n 8", nodes: []int{0, 1}, tasks: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{args: "-n 9", err: "Unable to create step for job 42: More processors requested than permitted"},
		{args: "-n 9 -O", nodes: []int{0, 1}, tasks: [][]int{{0, 1, 2, 3, 4}, {5, 6, 7, 8}}},
		{args: "-n 4 -c 2", nodes: []int{0, 1}},
		{args: "-n 4 -c 4", err: "More processors requested than permitted"},
		{args: "-N 3", err: "Minimum node count > allocated node count (3 > 2)"},
		{args: "-n 4 -m cyclic", nodes: []int{0, 1}, tasks: [][]int{{0, 2}, {1, 3}}},
		{args: "-n 3 --distribution=cyclic:block", warn: "not place them on sockets or cores", tasks: [][]int{{0, 2}, {1}}},
		{args: "-m plane=2", warn: "plane distribution is not done"},
		{args: "-m diagonal", err: "Invalid --distribution specification"},
		{args: "-w job-42-1", nodes: []int{1}, tasks: [][]int{{0}}},
		{args: "-w job-42-1 -n 2", nodes: []int{1}, tasks: [][]int{{0, 1}}},
		{args: "-w testdata/hosts", nodes: []int{0, 1}},
		{args: "-w job-42-[0-1] -N 1", warn: "Required nodelist includes more nodes than permitted by max-node count (2 > 1)", nodes: []int{0}},
		{args: "-w job-42-[0-1] -n 2", nodes: []int{0, 1}},
		{args: "-w job-42-7", err: "Unable to create step for job 42: Requested node configuration is not available"},
		{args: "-w job-42-1 -N 2", nodes: []int{0, 1}},
		{args: "-x job-42-0 -n 1", nodes: []int{1}},
		{args: "-r 1 -n 1", nodes: []int{1}},
		{args: "--jobid=42", nodes: []int{0, 1}},
		{args: "--jobid=43", err: "--jobid=43: this srun runs steps in job 42 only"},
		{args: "--mpi=pmi2", check: func(o *srunOptions) bool { return o.mpi == "pmi2" }},
		{args: "--mpi=pmix_v4", check: func(o *srunOptions) bool { return o.mpi == "pmix" }},
		{args: "--mpi=cray_shasta", err: "Invalid MPI type 'cray_shasta', --mpi=list for acceptable types"},
		{args: "--gpus-per-node=2", nodes: []int{0, 1}},
		{args: "--gpus-per-node=1", warn: "--gpus-per-node=1: the step's tasks see all 2 GPUs of their node"},
		{args: "--gres=gpu:3", err: "Invalid generic resource (gres) specification"},
		{args: "--gpus=5", err: "Invalid generic resource (gres) specification"},
		{args: "--gpus-per-task=2 -n 4", err: "Invalid generic resource (gres) specification"},
		{args: "--mem=8G", nodes: []int{0, 1}},
		{args: "--mem=0", nodes: []int{0, 1}},
		{args: "--mem=4G", warn: "--mem=4G: the step uses the job's memory, 8192 MiB per node"},
		{args: "--mem=9G", err: "Memory required by task is not available"},
		{args: "--mem-per-gpu=5G", err: "Memory required by task is not available"},
		{args: "--cpus-per-gpu=3", err: "More processors requested than permitted"},
		{args: "--container-image=nvcr.io/nvidia/pytorch:24.05-py3", err: "the job's container image is set at submit time"},
		{args: "--pty", err: "--pty inside a batch job is not supported"},
		{args: "--het-group=1", err: "heterogeneous jobs are not supported"},
		{args: "--multi-prog", err: "--multi-prog is not supported"},
		{args: "-W 5 -t 1:00 -K1 -X -u -v -v", check: func(o *srunOptions) bool {
			return o.wait == 5*time.Second && o.timeLimit == time.Minute && o.killOnBadExit && o.verbose == 2
		}},
		{args: "-lK0", check: func(o *srunOptions) bool { return o.label && !o.killOnBadExit }},
		{args: "--wait=x", err: `Invalid numeric value "x" for --wait.`},
		{args: "--open-mode=bogus", err: "Invalid --open-mode specification"},
		{args: "-i none -D /tmp --open-mode=a", check: func(o *srunOptions) bool {
			return o.input == "none" && o.chdir == "/tmp" && o.appendOutput && o.openModeSet
		}},
		{args: "--tres-per-task=gres/gpu:1,cpu=2", check: func(o *srunOptions) bool { return o.gpusPerTask == 1 && o.cpusPerTask == 2 }},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			o, warns, err := parseSrun(append(strings.Fields(c.args), "true"), getenv)
			var plan *stepPlan
			if err == nil {
				var more []string
				plan, more, err = planStep(o, job, alloc)
				warns = append(warns, more...)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(warns, "\n")
			if (c.warn == "" && got != "") || !strings.Contains(got, c.warn) {
				t.Errorf("warnings %q, want %q", got, c.warn)
			}
			if c.nodes != nil && !equalInts(plan.nodes, c.nodes) {
				t.Errorf("nodes %v, want %v", plan.nodes, c.nodes)
			}
			if c.tasks != nil && !equalTasks(plan.tasks, c.tasks) {
				t.Errorf("tasks %v, want %v", plan.tasks, c.tasks)
			}
			if c.check != nil && !c.check(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalTasks(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalInts(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestSrunPrintsAndExits: --mpi=list, --help and --version print and
// exit 0 without a job, as srun does.
func TestSrunPrintsAndExits(t *testing.T) {
	for args, want := range map[string]string{
		"--mpi=list": "MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\n",
		"--version":  "slurm " + SlurmRelease + " (sluice)\n",
		"-h":         "--ntasks=VALUE",
	} {
		var out, errOut strings.Builder
		rc := Srun(strings.Fields(args), func(string) string { return "" }, nil, nil, &out, &errOut)
		if rc != 0 || !strings.Contains(out.String(), want) {
			t.Errorf("srun %s: %d %q %q, want %q", args, rc, out.String(), errOut.String(), want)
		}
	}
}

// TestSrunStepTimeLimit: at the step's -t limit its tasks get SIGTERM
// (SIGKILL would follow after KillWait), srun says so as slurmstepd does
// and the step ends TIMEOUT.
func TestSrunStepTimeLimit(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"SLURM_JOB_ID": "42", EnvRunDir: dir, "SLURM_NODEID": "0", EnvHosts: "job-42-0", "PATH": os.Getenv("PATH")}
	getenv := func(k string) string { return env[k] }
	job, err := JobFromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := parseSrun([]string{"sh", "-c", `trap "echo term; exit 0" TERM; echo ready; while :; do sleep 0.1; done`}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	o.timeLimit = 300 * time.Millisecond // -t counts minutes
	plan, _, err := planStep(o, job, allocation{})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	rc := runStep(o, job, plan, "none", getenv, []string{"PATH=" + os.Getenv("PATH")}, nil, &out, &errOut, func([]string) {})
	if rc != 0 || out.String() != "ready\nterm\n" {
		t.Errorf("srun exited %d with output %q, want 0 and the task's trap of SIGTERM", rc, out.String())
	}
	if !strings.Contains(errOut.String(), "slurmstepd: error: *** STEP 42.0 ON job-42-0 CANCELLED AT ") || !strings.Contains(errOut.String(), " DUE TO TIME LIMIT ***") {
		t.Errorf("srun's stderr %q", errOut.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, stepLogFile))
	if !strings.Contains(string(b), "TIMEOUT") {
		t.Errorf("step log %q, want the step TIMEOUT", b)
	}
}

// TestTerminateEscalates: a task that ignores the SIGTERM srun sends to
// end a step gets SIGKILL once the wait is over.
func TestTerminateEscalates(t *testing.T) {
	job := &Job{ID: "1", Hosts: []string{"h"}}
	exits := make(chan taskExit, 1)
	emit := func(e event) {
		if e.Exit != nil {
			exits <- *e.Exit
		}
	}
	spec := StepSpec{JobID: "1", Argv: []string{"sh", "-c", `trap "" TERM; echo ready; sleep 30`}, Cwd: t.TempDir(), Nodes: []string{"h"},
		NTasks: 1, Tasks: []TaskSlot{{}}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	ready := make(chan struct{}, 1)
	st, err := startNodeStep(job, spec, os.Getenv, func(e event) {
		if e.Stream == 1 {
			ready <- struct{}{}
		}
		emit(e)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case x := <-exits:
		t.Fatalf("the task ended before it was ready: %+v", x)
	}
	r := &stepRun{job: job, nodes: []int{0}, counts: []int{1}, stderr: io.Discard, done: make(chan struct{}), local: st}
	start := time.Now()
	r.terminate(200 * time.Millisecond)
	select {
	case x := <-exits:
		if x.Signal != int(syscall.SIGKILL) || time.Since(start) < 200*time.Millisecond {
			t.Errorf("task ended %+v after %v, want SIGKILL after the wait", x, time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task outlived the SIGKILL")
	}
	close(r.done)
}

// syncBuffer is a strings.Builder for several writers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
