package sbatch

import (
	"fmt"
	"strconv"
	"strings"
)

// Ignored lists the rest of sbatch's options that Sluice accepts with a
// warning, so that scripts written for Slurm keep working: what they tune
// (CPU binding, node geometry, mail, profiling) has no counterpart on
// Kubernetes or is the scheduler's. Table holds the options that were
// there first; together with Refused they are every option of sbatch.
var Ignored = []Option{
	{"acctg-freq", 0, RequiredArg, "ignored: accounting samples come from the cluster's metrics", nil},
	{"batch", 0, RequiredArg, "ignored: the batch step runs on the job's first node", nil},
	{"clusters", 'M', RequiredArg, "ignored: Sluice is one cluster", nil},
	{"cluster-constraint", 0, RequiredArg, "ignored: Sluice is one cluster", nil},
	{"container-id", 0, RequiredArg, "ignored: the container is named by --container-image", nil},
	{"contiguous", 0, NoArg, "ignored: placement is the scheduler's", nil},
	{"core-spec", 'S', RequiredArg, "ignored: no cores are set aside for system use", nil},
	{"cores-per-socket", 0, RequiredArg, "ignored: node geometry is not requested", nil},
	{"cpu-freq", 0, RequiredArg, "ignored: CPU frequencies are not set", nil},
	{"cpus-per-gpu", 0, RequiredArg, "ignored: ask for CPUs with --cpus-per-task", nil},
	{"delay-boot", 0, RequiredArg, "ignored: nodes are not rebooted for jobs", nil},
	{"extra", 0, RequiredArg, "ignored: no extra node constraints", nil},
	{"extra-node-info", 'B', RequiredArg, "ignored: node geometry is not requested", nil},
	{"get-user-env", 0, NoArg, "ignored: the environment is the one sbatch sends (--export)", nil},
	{"gpu-freq", 0, RequiredArg, "ignored: GPU frequencies are not set", nil},
	{"gres-flags", 0, RequiredArg, "ignored: GPU binding is the device plugin's", nil},
	{"ignore-pbs", 0, NoArg, "ignored: #PBS lines are never read", nil},
	{"kill-on-invalid-dep", 0, RequiredArg, "ignored: a job whose dependency can never be met stays pending (DependencyNeverSatisfied)", nil},
	{"mem-bind", 0, RequiredArg, "ignored: memory binding is not set", nil},
	{"mincpus", 0, RequiredArg, "ignored: ask for CPUs with --cpus-per-task", nil},
	{"network", 0, RequiredArg, "ignored: the pod network is the cluster's", nil},
	{"nodefile", 'F', RequiredArg, "ignored: placement is the scheduler's", nil},
	{"ntasks-per-core", 0, RequiredArg, "ignored: node geometry is not requested", nil},
	{"ntasks-per-gpu", 0, RequiredArg, "ignored: ask for GPUs with --gpus-per-task", nil},
	{"ntasks-per-socket", 0, RequiredArg, "ignored: node geometry is not requested", nil},
	{"oom-kill-step", 0, RequiredArg, "ignored: the kubelet's OOM handling applies", nil},
	{"power", 0, RequiredArg, "ignored: no power management", nil},
	{"prefer", 0, RequiredArg, "ignored: placement is the scheduler's", nil},
	{"priority", 0, RequiredArg, "the job's priority (operators and administrators only)", setPriority},
	{"profile", 0, RequiredArg, "ignored: no profiling plugin", nil},
	{"propagate", 0, RequiredArg, "ignored: the container's resource limits apply", nil},
	{"reboot", 0, NoArg, "ignored: nodes are not rebooted for jobs", nil},
	{"resv-ports", 0, RequiredArg, "ignored: no ports are reserved", nil},
	{"segment", 0, RequiredArg, "ignored: no topology/block plugin", nil},
	{"sockets-per-node", 0, RequiredArg, "ignored: node geometry is not requested", nil},
	{"thread-spec", 0, RequiredArg, "ignored: no threads are set aside for system use", nil},
	{"time-min", 0, RequiredArg, "ignored: the job's limit is --time", nil},
	{"tres-bind", 0, RequiredArg, "ignored: GPU binding is the device plugin's", nil},
	{"tres-per-task", 0, RequiredArg, "ignored: ask for GPUs with --gpus-per-task", nil},
	{"use-min-nodes", 0, NoArg, "ignored: a node range is started on its minimum", nil},
	{"wait-all-nodes", 0, RequiredArg, "ignored: a job starts when all its pods are placed", nil},
	{"wrap", 0, RequiredArg, "wrap the command string in a simple sh script and submit it (command line only)", setWrap},
}

// RefusedOption is an sbatch option Sluice refuses: honouring it is
// impossible here and ignoring it would change what the job does or when.
type RefusedOption struct {
	Long  string
	Short byte
	Why   string
}

// Refused lists the options sbatch has that Sluice refuses, each with
// the reason given in the error.
var Refused = []RefusedOption{
	{"bb", 0, "burst buffers are not configured"},
	{"bbf", 0, "burst buffers are not configured"},
	{"container", 0, "OCI bundles are not run; use --container-image"},
	{"deadline", 0, "jobs are not removed at a deadline"},
	{"export-file", 0, "use --export"},
	{"gid", 0, "jobs run with the group the site maps to the user"},
	{"licenses", 'L', "Invalid license specification: no licenses are configured"},
	{"mcs-label", 0, "no MCS plugin is configured"},
	{"test-only", 0, "give --test-only on the sbatch command line: a script's directive cannot keep its own job from being stored"},
	{"uid", 0, "jobs run as the authenticated user"},
	{"wait", 'W', "give -W/--wait on the sbatch command line: a script's directive cannot make the command wait"},
}

// Honoured reports whether opt takes effect (as opposed to being
// accepted with a warning).
func (o Option) Honoured() bool { return o.apply != nil }

// lookupAny finds a long option by name or unambiguous prefix among all
// of sbatch's options, as getopt_long does over its whole table.
func lookupAny(name string) (*Option, *RefusedOption, error) {
	type hit struct {
		opt *Option
		ref *RefusedOption
		n   string
	}
	var prefix []hit
	for _, list := range [][]Option{Table, Ignored} {
		for i := range list {
			o := &list[i]
			if o.Long == name {
				return o, nil, nil
			}
			if name != "" && strings.HasPrefix(o.Long, name) {
				prefix = append(prefix, hit{opt: o, n: o.Long})
			}
		}
	}
	for i := range Refused {
		r := &Refused[i]
		if r.Long == name {
			return nil, r, nil
		}
		if name != "" && strings.HasPrefix(r.Long, name) {
			prefix = append(prefix, hit{ref: r, n: r.Long})
		}
	}
	switch len(prefix) {
	case 0:
		return nil, nil, fmt.Errorf("unrecognized option --%s", name)
	case 1:
		return prefix[0].opt, prefix[0].ref, nil
	}
	return nil, nil, fmt.Errorf("option --%s is ambiguous (--%s, --%s, ...)", name, prefix[0].n, prefix[1].n)
}

func lookupAnyShort(c byte) (*Option, *RefusedOption, error) {
	for _, list := range [][]Option{Table, Ignored} {
		for i := range list {
			if list[i].Short == c {
				return &list[i], nil, nil
			}
		}
	}
	for i := range Refused {
		if Refused[i].Short == c {
			return nil, &Refused[i], nil
		}
	}
	return nil, nil, fmt.Errorf("invalid option -%c", c)
}

func (r *RefusedOption) err() error {
	return fmt.Errorf("--%s is not supported in Sluice: %s", r.Long, r.Why)
}

func setPriority(o *Options, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("--priority %q is not a non-negative whole number", v)
	}
	o.Priority = n
	return nil
}

func setWrap(o *Options, v string) error {
	o.Wrap = v
	return nil
}
