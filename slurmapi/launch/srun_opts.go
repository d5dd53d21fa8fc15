package launch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// srunOptions are the srun options Sluice supports inside a job.
type srunOptions struct {
	ntasks, nodes, perNode   int
	gpusPerTask, cpusPerTask int
	label, killOnBadExit     bool
	export                   string // ALL (default), NONE, or a list
	output, errorFile        string
	name                     string
	signal                   *sbatch.Signal // --signal
	argv                     []string
}

// parseSrun reads srun's options up to the command, as srun does: the
// first word that is not an option starts the command.
func parseSrun(args []string, getenv func(string) string) (*srunOptions, error) {
	o := &srunOptions{export: "ALL"}
	if v := getenv("SRUN_CPUS_PER_TASK"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("SRUN_CPUS_PER_TASK=%q is not a positive number", v)
		}
		o.cpusPerTask = n
	}
	num := func(name, v string, dst *int) error {
		if name == "--nodes" || name == "-N" {
			v, _, _ = strings.Cut(v, "-") // min[-max]: the step takes the minimum
		}
		if name == "--gpus-per-task" {
			if _, after, ok := strings.Cut(v, ":"); ok { // [type:]count
				v = after
			}
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%s %q: want a positive number", name, v)
		}
		*dst = n
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.argv = args[i+1:]
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			o.argv = args[i:]
			break
		}
		name, value, hasValue := a, "", false
		if strings.HasPrefix(a, "--") {
			name, value, hasValue = strings.Cut(a, "=")
		} else if len(a) > 2 {
			name, value, hasValue = a[:2], a[2:], true // -n4
		}
		takes := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		var v string
		switch name {
		case "-n", "--ntasks":
			if v, err = takes(); err == nil {
				err = num("--ntasks", v, &o.ntasks)
			}
		case "-N", "--nodes":
			if v, err = takes(); err == nil {
				err = num("--nodes", v, &o.nodes)
			}
		case "--ntasks-per-node":
			if v, err = takes(); err == nil {
				err = num(name, v, &o.perNode)
			}
		case "--gpus-per-task":
			if v, err = takes(); err == nil {
				err = num(name, v, &o.gpusPerTask)
			}
		case "-c", "--cpus-per-task":
			if v, err = takes(); err == nil {
				err = num("--cpus-per-task", v, &o.cpusPerTask)
			}
		case "-l", "--label":
			o.label = true
			if hasValue && name == "-l" {
				err = fmt.Errorf("option -l takes no value")
			}
		case "-K", "--kill-on-bad-exit":
			o.killOnBadExit = !hasValue || value != "0"
		case "--export":
			o.export, err = takes()
		case "-o", "--output":
			o.output, err = takes()
		case "-e", "--error":
			o.errorFile, err = takes()
		case "-J", "--job-name":
			o.name, err = takes()
		case "--signal":
			if v, err = takes(); err == nil {
				var sig sbatch.Signal
				if sig, err = sbatch.ParseSignal(v); err == nil && sig.Batch {
					err = fmt.Errorf("--signal=%s: B: (the batch shell) is sbatch's; srun signals its step's tasks", v)
				}
				o.signal = &sig
			}
		case "--pty":
			err = fmt.Errorf("--pty inside a batch job is not supported; interactive srun is not available yet")
		default:
			err = fmt.Errorf("unrecognized option %q (Sluice's srun supports -n, -N, --ntasks-per-node, --gpus-per-task, -c, -l, -K, --export, -o, -e, -J, --signal)", a)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(o.argv) == 0 {
		return nil, fmt.Errorf("no command to run")
	}
	return o, nil
}

// layout decides how many of the allocation's nodes the step uses and
// how many tasks each runs (block distribution: consecutive task ids per
// node, the first nodes taking the remainder). jobTasks is the job's
// SLURM_NTASKS, the default task count as in srun.
func layout(o *srunOptions, allocNodes, jobTasks int) ([]int, error) {
	n, nodes, k := o.ntasks, o.nodes, o.perNode
	if nodes > allocNodes {
		return nil, fmt.Errorf("--nodes=%d: only %d nodes in this allocation", nodes, allocNodes)
	}
	switch {
	case n > 0:
	case k > 0:
		if nodes == 0 {
			nodes = allocNodes
		}
		n = nodes * k
	case nodes > 0:
		n = nodes
	default:
		n, nodes = max(jobTasks, allocNodes), allocNodes
	}
	if nodes == 0 {
		nodes = allocNodes
		if k > 0 {
			nodes = min(allocNodes, (n+k-1)/k)
		}
	}
	nodes = min(nodes, n) // srun: fewer tasks than nodes uses fewer nodes
	if k > 0 && n > nodes*k {
		return nil, fmt.Errorf("%d tasks do not fit %d nodes at --ntasks-per-node=%d", n, nodes, k)
	}
	counts := make([]int, nodes)
	for i := range counts {
		counts[i] = n / nodes
		if i < n%nodes {
			counts[i]++
		}
	}
	return counts, nil
}

// exportEnv is the environment --export passes to the tasks: all of
// srun's (ALL), only SLURM_* (NONE), or SLURM_* plus the named variables
// (NAME or NAME=value, after ALL, to add to all of it).
func exportEnv(spec string, environ []string) []string {
	items := strings.Split(spec, ",")
	all := strings.EqualFold(items[0], "ALL")
	if all || strings.EqualFold(items[0], "NONE") {
		items = items[1:]
	}
	vars := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if all || strings.HasPrefix(k, "SLURM") || strings.HasPrefix(k, "SLUICE_") || k == "PATH" {
			put(k, v)
		}
	}
	for _, it := range items {
		if k, v, ok := strings.Cut(it, "="); ok {
			put(k, v)
			continue
		}
		for _, kv := range environ {
			if k, v, _ := strings.Cut(kv, "="); k == it {
				put(k, v)
			}
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}
