package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/slurmapi"
)

// What srun does with the options of srunTable that act while the step
// runs, beside srun.go's loop: -i, --prolog and --epilog, -v's task ids.

// stepInput is task 0's input for -i (nil: /dev/null), the warnings for
// what it cannot give as asked, and how to close an input file. Sluice
// delivers input to task 0 only: "all" and a file reach every task of a
// one-task step exactly as in Slurm; with more tasks the others read
// /dev/null, and said so.
func stepInput(o *srunOptions, job *Job, plan *stepPlan, step int, cwd string, stdin io.Reader) (io.Reader, []string, func(), error) {
	none := func() {}
	tasks := sum(plan.counts())
	in := o.input
	if n, err := strconv.Atoi(in); err == nil {
		switch {
		case n < 0 || n >= tasks:
			return nil, nil, none, fmt.Errorf("--input=%d: the step's tasks are 0-%d", n, tasks-1)
		case n == 0:
			return stdin, nil, none, nil
		}
		return nil, []string{fmt.Sprintf("--input=%d: task %d reads /dev/null as every other task does: Sluice gives srun's input to task 0 only", n, n)}, none, nil
	}
	switch strings.ToLower(in) {
	case "":
		return stdin, nil, none, nil
	case "none":
		return nil, nil, none, nil
	case "all":
		var w []string
		if tasks > 1 {
			w = append(w, "--input=all: only task 0 reads srun's input; the other tasks read /dev/null")
		}
		return stdin, w, none, nil
	}
	spec := StepSpec{Step: step, Cwd: cwd, Nodes: job.Hosts, NTasks: tasks}
	if len(plan.nodes) > 0 {
		spec.Nodes, spec.NodeIndex = []string{job.Hosts[plan.nodes[0]]}, 0
	}
	f, err := os.Open(expandTaskPath(in, job, spec, TaskSlot{}))
	if err != nil {
		return nil, nil, none, fmt.Errorf("--input=%s: %v", in, unwrapPath(err))
	}
	var w []string
	if tasks > 1 {
		w = append(w, fmt.Sprintf("--input=%s: only task 0 reads the file; the other tasks read /dev/null", in))
	}
	return f, w, func() { f.Close() }, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// runHook runs srun's --prolog or --epilog: PROGRAM with the step's
// command and arguments as its own, on srun's node, and returns its
// status (128+N for signal N; 127 when it cannot start).
func runHook(program string, argv, env []string, dir string, stdout, stderr io.Writer) int {
	cmd := exec.Command(program, argv...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, stdout, stderr
	if err := cmd.Run(); err != nil {
		var x *exec.ExitError
		if !errors.As(err, &x) {
			fmt.Fprintf(stderr, "srun: error: %s: %v\n", program, unwrapExec(err))
			return 127
		}
		if st, ok := x.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return x.ExitCode()
	}
	return 0
}

// taskRanges writes task ids as srun -v does: "0", "[0-3]", "[0,2]".
func taskRanges(ids []int) string {
	if len(ids) == 1 {
		return strconv.Itoa(ids[0])
	}
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// stepEnv is what the tasks get from srun: --export's environment, with
// SLURM_OPEN_MODE as --open-mode says (the nodes open per-task -o/-e
// files by it, as they do for sbatch's export of it).
func stepEnv(o *srunOptions, environ []string) []string {
	env := exportEnv(o.export, environ)
	if !o.openModeSet {
		return env
	}
	mode := "SLURM_OPEN_MODE=t"
	if o.appendOutput {
		mode = "SLURM_OPEN_MODE=a"
	}
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SLURM_OPEN_MODE=") })
	return append(env, mode)
}

// SrunKnows reports whether arg (as given: "-u", "--mpi=pmi2", "-W5")
// starts with an option of srun's table; the CLI's srun passes those to
// the step.
func SrunKnows(arg string) bool {
	if long, ok := strings.CutPrefix(arg, "--"); ok {
		name, _, _ := strings.Cut(long, "=")
		_, err := lookupSrun(name)
		return err == nil
	}
	return len(arg) >= 2 && arg[0] == '-' && lookupSrunShort(arg[1]) != nil
}

// SrunHonours reports whether srun option arg is one srun honours (not
// one it warns about or refuses).
func SrunHonours(arg string) bool {
	var o *srunOpt
	if long, ok := strings.CutPrefix(arg, "--"); ok {
		name, _, _ := strings.Cut(long, "=")
		o, _ = lookupSrun(name)
	} else if len(arg) >= 2 && arg[0] == '-' {
		o = lookupSrunShort(arg[1])
	}
	return o != nil && o.support == slurmapi.Honoured
}

// SrunTakesSeparateValue reports whether srun option arg takes its value
// from the next argument (--mpi pmi2, -W 5).
func SrunTakesSeparateValue(arg string) bool {
	if long, ok := strings.CutPrefix(arg, "--"); ok {
		if strings.Contains(long, "=") {
			return false
		}
		o, err := lookupSrun(long)
		return err == nil && o.arg == reqArg
	}
	if len(arg) != 2 || arg[0] != '-' {
		return false
	}
	o := lookupSrunShort(arg[1])
	return o != nil && o.arg == reqArg
}
