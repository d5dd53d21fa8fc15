package launch

import (
	"github.com/sluicehq/sluice/slurmapi"
)

// srun's option table. Every option of Slurm's srun (22.05's man page and
// --help, and what newer releases document) has one row here, with what
// Sluice does with it inside a job:
//
//   - Honoured: the option takes effect (apply stores it, planStep and
//     the step run act on it);
//   - Warned: accepted, and srun says on stderr, in one line, what Sluice
//     does instead ("srun: warning: --cpu-bind=cores: ..."); -Q silences it;
//   - Refused: srun stops with an error, Slurm's own text where Slurm
//     itself would refuse.
//
// Some honoured options still warn or refuse for some values (a
// --distribution beyond block and cyclic, more GPUs than a node has);
// their note says so. parseSrun reads this table and nothing else, the
// doc section of docs/srun.md is made from it (srunOptionsMarkdown), and
// TestSrunOptionsCoverSlurm checks it against Slurm's own option list
// (testdata/srun-options.txt).

// srunArg is how an option takes its value, as getopt_long knows it.
type srunArg int

const (
	noArg  srunArg = iota // --label
	reqArg                // --ntasks=4, --ntasks 4, -n4, -n 4
	optArg                // --exclusive[=user], -K[0|1]: only joined to the option
)

// srunOpt is one row of srun's option table.
type srunOpt struct {
	long    string
	short   byte // 0: none
	arg     srunArg
	support slurmapi.Support
	// note says what Sluice does: for a Warned row without apply it is
	// the warning, for a Refused one without apply the error.
	note string
	// apply stores an honoured option, or decides (by value) whether to
	// warn or refuse; nil: the row's support and note say it all.
	apply func(p *srunParser, v string) error
	// since is "" for an option of Slurm 22.05, else where it comes from:
	// "newer" (a later Slurm release documents it) or "pyxis" (a SPANK
	// plugin's).
	since string
}

func on(long string, short byte, arg srunArg, note string, apply func(*srunParser, string) error) srunOpt {
	return srunOpt{long: long, short: short, arg: arg, support: slurmapi.Honoured, note: note, apply: apply}
}

func warned(long string, short byte, arg srunArg, note string) srunOpt {
	return srunOpt{long: long, short: short, arg: arg, support: slurmapi.Warned, note: note}
}

// warnedBy is a Warned row whose apply decides (by value) what to say.
func warnedBy(long string, short byte, arg srunArg, note string, apply func(*srunParser, string) error) srunOpt {
	return srunOpt{long: long, short: short, arg: arg, support: slurmapi.Warned, note: note, apply: apply}
}

func refused(long string, short byte, arg srunArg, why string) srunOpt {
	return srunOpt{long: long, short: short, arg: arg, support: slurmapi.Refused, note: why}
}

func newer(o srunOpt, since string) srunOpt {
	o.since = since
	return o
}

// What Sluice does instead, for the options that share a reason.
const (
	allocOnly  = "applies to job allocations; this step runs in the job's allocation as it is (in Slurm too, a step inside an allocation does not change it)"
	bindCPU    = "Sluice does not bind tasks to CPUs; the container's cgroup limits them"
	bindMem    = "Sluice does not bind tasks to memory; the container's cgroup limits them"
	bindGPU    = "Sluice does not bind tasks to GPUs; each task sees its node's GPUs (its own with --gpus-per-task)"
	geometry   = "node geometry (sockets, cores, threads) is not modelled; tasks share the pod's CPUs"
	noBcast    = "nothing is copied to the nodes: every node runs the job's image and sees the same filesystems"
	noFreq     = "frequencies are not set; the nodes run at theirs"
	sharedStep = "Sluice's steps share the job's allocation: every step's tasks use the pod's CPUs and see its GPUs, and a step never waits for another to end"
	pyxis      = "the job's container image is set at submit time (sbatch --container-image, or the partition's default image); a step runs in the job's container"
)

// srunTable is every srun option, in the order of Slurm's man page.
var srunTable = []srunOpt{
	warned("accel-bind", 0, reqArg, bindGPU),
	warnedBy("account", 'A', reqArg, allocOnly+" (no warning when it names the job's account)", sameAsJob("SLURM_JOB_ACCOUNT")),
	warned("acctg-freq", 0, reqArg, "accounting samples come from the cluster's metrics"),
	warned("bb", 0, reqArg, allocOnly),
	warned("bbf", 0, reqArg, allocOnly),
	warned("bcast", 0, optArg, noBcast),
	warned("bcast-exclude", 0, reqArg, noBcast),
	warned("begin", 'b', reqArg, allocOnly),
	on("chdir", 'D', reqArg, "the tasks' working directory (relative: to srun's); -o, -e and -i files are relative to it", setChdir),
	warned("cluster-constraint", 0, reqArg, allocOnly),
	warned("clusters", 'M', reqArg, "Sluice is one cluster: the step runs in this job"),
	warned("comment", 0, reqArg, allocOnly),
	warned("compress", 0, optArg, noBcast),
	warned("constraint", 'C', reqArg, allocOnly),
	refused("container", 0, reqArg, "--container: OCI bundles are not run; "+pyxis),
	newer(warned("container-id", 0, reqArg, "the step runs in the job's container"), "newer"),
	warned("contiguous", 0, noArg, allocOnly),
	warned("core-spec", 'S', reqArg, allocOnly),
	warned("cores-per-socket", 0, reqArg, geometry),
	warned("cpu-bind", 0, reqArg, bindCPU),
	warned("cpu-freq", 0, reqArg, noFreq),
	warnedBy("cpus-per-gpu", 0, reqArg, "the step's tasks share the pod's CPUs; more CPUs per node than the job has is refused (More processors requested than permitted)", setCPUsPerGPU),
	on("cpus-per-task", 'c', reqArg, "SLURM_CPUS_PER_TASK and the step's TRES, counted against the job's CPUs (not confined: the pod's limits apply); also SRUN_CPUS_PER_TASK", setCPUsPerTask),
	warned("deadline", 0, reqArg, allocOnly),
	warned("delay-boot", 0, reqArg, allocOnly),
	warned("dependency", 'd', reqArg, allocOnly),
	on("disable-status", 'X', noArg, "what Sluice's srun always does: a Ctrl-C (SIGINT) goes to every task at once", nil),
	on("distribution", 'm', reqArg, "block (default: consecutive task ids per node) and cyclic (round robin over the step's nodes); plane and arbitrary are warned and placed as block, the socket and core levels and Pack/NoPack are warned", setDistribution),
	on("epilog", 0, reqArg, "runs PROGRAM COMMAND... on srun's node after the step (none: no epilog); a failure is reported (srun epilog failed status=N)", setEpilog),
	on("error", 'e', reqArg, "%j %J %s %t %n %N %u %x %% expanded; a pattern with %t, %n or %N is written by each node for its tasks, another one by srun for all", setError),
	warned("exact", 0, noArg, sharedStep),
	on("exclude", 'x', reqArg, "the step does not use these hosts of the allocation (a host list or a file of them)", setExclude),
	warnedBy("exclusive", 0, optArg, sharedStep+"; --exclusive with --overlap is refused, as Slurm refuses it", setExclusive),
	on("export", 0, reqArg, "ALL (default), NONE (only SLURM_*, SLUICE_*, PATH), or a list of NAME / NAME=value (after ALL, to add to everything)", setExport),
	newer(warned("extra", 0, reqArg, allocOnly), "newer"),
	warned("extra-node-info", 'B', reqArg, geometry),
	refused("gid", 0, reqArg, "--gid: tasks run with the job's group; only root may change it"),
	warned("gpu-bind", 0, reqArg, bindGPU),
	warned("gpu-freq", 0, reqArg, noFreq),
	warnedBy("gpus", 'G', reqArg, "the step uses the job's GPUs: a different count is warned, more than the step's nodes have is refused (Invalid generic resource (gres) specification)", setGPUs),
	warnedBy("gpus-per-node", 0, reqArg, "the step uses the job's GPUs: a different count is warned, more than a node has is refused (Invalid generic resource (gres) specification)", setGPUsPerNode),
	warned("gpus-per-socket", 0, reqArg, geometry),
	on("gpus-per-task", 0, reqArg, "task L of a node gets GPUs L*N..L*N+N-1 of its node as CUDA_VISIBLE_DEVICES; more than the node has is refused", setGPUsPerTask),
	warnedBy("gres", 0, reqArg, "the step uses the job's GRES: gpu counts as --gpus-per-node; other GRES are warned", setGRES),
	warned("gres-flags", 0, reqArg, bindGPU),
	on("help", 'h', noArg, "prints this table's options and exits", showHelp),
	on("het-group", 0, reqArg, "0, the job's only component, is accepted; another is refused: heterogeneous jobs are not supported", setHetGroup),
	warned("hint", 0, reqArg, bindCPU),
	warned("hold", 'H', noArg, allocOnly),
	on("immediate", 'I', optArg, "a step never waits for resources in Sluice, so it starts at once, as -I asks", nil),
	on("input", 'i', reqArg, "0 (default) and a task id 0: srun's stdin to task 0; none: /dev/null for every task; all, or a file, for a one-task step; all, a file or another task id with several tasks: warned, task 0 only (all, a file) or no task (another id) reads it", setInput),
	on("job-name", 'J', reqArg, "the step's name in sacct", setName),
	on("jobid", 0, reqArg, "this job's id is accepted; another job's is refused (from your own shell, sluice srun --jobid=N runs a step there)", setJobID),
	on("kill-on-bad-exit", 'K', optArg, "a task that fails ends the step: the other tasks get SIGTERM, then SIGKILL after KillWait (30 s); -K0 turns it off", setKillOnBadExit),
	on("label", 'l', noArg, "each line is prefixed with its task id, padded as srun pads it (\"0: \")", setLabel),
	warned("licenses", 'L', reqArg, allocOnly),
	warned("mail-type", 0, reqArg, allocOnly),
	warned("mail-user", 0, reqArg, allocOnly),
	warned("mcs-label", 0, reqArg, allocOnly),
	warnedBy("mem", 0, reqArg, "the step uses the job's memory (the pod's limit): a different size is warned, more than the job has is refused (Memory required by task is not available); 0 (all of the job's) is silent", setMem),
	warned("mem-bind", 0, reqArg, bindMem),
	warnedBy("mem-per-cpu", 0, reqArg, "as --mem, for MiB times the step's CPUs on a node", setMemPerCPU),
	warnedBy("mem-per-gpu", 0, reqArg, "as --mem, for MiB times the node's GPUs", setMemPerGPU),
	warned("mincpus", 0, reqArg, allocOnly),
	on("mpi", 0, reqArg, "none, pmi2 or pmix (pmix_vN) for the launcher's PMI; default SLURM_MPI_TYPE, then none; list prints the types; another is refused (Invalid MPI type)", setMPI),
	warned("msg-timeout", 0, reqArg, "srun talks to each node's launcher over HTTP; no launch message times out"),
	refused("multi-prog", 0, noArg, "--multi-prog is not supported: every task of a step runs the same command; pick by $SLURM_PROCID in a wrapper script"),
	warned("network", 0, reqArg, "the pod network is the cluster's"),
	warned("nice", 0, optArg, allocOnly),
	warned("no-allocate", 'Z', noArg, "the step runs in the job's allocation"),
	warned("no-kill", 'k', optArg, "a job that loses a node is requeued or ends NODE_FAIL; its steps are not kept running"),
	on("nodefile", 'F', reqArg, "as --nodelist, from a file of host names", setNodefile),
	on("nodelist", 'w', reqArg, "the step runs on these hosts of the allocation (a host list or a file of them); a host outside it is refused (Requested node configuration is not available)", setNodelist),
	on("nodes", 'N', reqArg, "the first N nodes of the allocation (min-max: min); fewer tasks than nodes use fewer nodes; more than allocated is refused", setNodes),
	on("ntasks", 'n', reqArg, "task count; default the job's SLURM_NTASKS (one per node unless the job asked more); more tasks x CPUs per task than the job's CPUs on a node is refused (More processors requested than permitted)", setNTasks),
	warned("ntasks-per-core", 0, reqArg, geometry),
	warned("ntasks-per-gpu", 0, reqArg, "ask for tasks with -n or --ntasks-per-node; a node's tasks share its GPUs (split them with --gpus-per-task)"),
	on("ntasks-per-node", 0, reqArg, "at most this many per node; without -n, N x this many", setPerNode),
	warned("ntasks-per-socket", 0, reqArg, geometry),
	on("open-mode", 0, reqArg, "append or truncate (default: SLURM_OPEN_MODE, which sbatch --open-mode exports, else truncate) for the -o and -e files, srun's and the per-task ones (%t, %n, %N) the nodes write", setOpenMode),
	on("output", 'o', reqArg, "%j %J %s %t %n %N %u %x %% expanded; a pattern with %t, %n or %N is written by each node for its tasks, another one by srun for all", setOutput),
	on("overcommit", 'O', noArg, "more tasks x CPUs per task than the job's CPUs on a node is allowed", setOvercommit),
	on("overlap", 0, noArg, "what every Sluice step does: "+sharedStep, setOverlap),
	warned("oversubscribe", 's', noArg, allocOnly),
	warnedBy("partition", 'p', reqArg, allocOnly+" (no warning when it names the job's partition)", sameAsJob("SLURM_JOB_PARTITION")),
	warned("power", 0, reqArg, "no power management"),
	warned("prefer", 0, reqArg, allocOnly),
	warned("preserve-env", 'E', noArg, "the tasks see the step's SLURM_NTASKS and SLURM_NNODES"),
	warned("priority", 0, reqArg, allocOnly),
	warned("profile", 0, reqArg, "no profiling plugin"),
	on("prolog", 0, reqArg, "runs PROGRAM COMMAND... on srun's node before the step (none: no prolog); a failure aborts the step (srun prolog failed rc = N. Aborting step.)", setProlog),
	warned("propagate", 0, optArg, "the container's resource limits apply to the tasks"),
	refused("pty", 0, noArg, "--pty inside a batch job is not supported; from your own shell, sluice srun --pty (with --jobid=N for a running job) opens a terminal on the job's first node"),
	warnedBy("qos", 'q', reqArg, allocOnly+" (no warning when it names the job's QOS)", sameAsJob("SLURM_JOB_QOS")),
	on("quiet", 'Q', noArg, "srun's warnings and informational messages are not printed; errors are", setQuiet),
	warned("quit-on-interrupt", 0, noArg, "a Ctrl-C (SIGINT) goes to every task at once, as with -X; the step ends when they do"),
	warned("reboot", 0, noArg, allocOnly),
	on("relative", 'r', reqArg, "the step's nodes start at node N of the allocation", setRelative),
	warned("reservation", 0, reqArg, allocOnly),
	warned("resv-ports", 0, optArg, "no ports are reserved"),
	newer(warned("segment", 0, reqArg, allocOnly), "newer"),
	warned("send-libs", 0, optArg, noBcast),
	on("signal", 0, reqArg, "[R:]SIG[@TIME]: this step's tasks get SIG TIME seconds (default 60) before the job's time limit; B: (the batch shell) is sbatch's and refused", setSignal),
	warned("slurmd-debug", 0, reqArg, "the launcher has no debug levels; its errors reach srun's stderr"),
	warned("sockets-per-node", 0, reqArg, geometry),
	warned("spread-job", 0, noArg, allocOnly),
	warned("switches", 0, reqArg, allocOnly),
	warned("task-epilog", 0, reqArg, "not run: the launcher runs no per-task epilog"),
	warned("task-prolog", 0, reqArg, "not run: the launcher runs no per-task prolog"),
	refused("test-only", 0, noArg, "--test-only: start times are not estimated; a Sluice step starts at once"),
	warned("thread-spec", 0, reqArg, allocOnly),
	warned("threads", 'T', reqArg, "srun starts every node's tasks at once"),
	warned("threads-per-core", 0, reqArg, geometry),
	on("time", 't', reqArg, "the step's time limit: at its end its tasks get SIGTERM, then SIGKILL after KillWait (30 s), and the step is TIMEOUT", setTime),
	warned("time-min", 0, reqArg, allocOnly),
	warned("tmp", 0, reqArg, allocOnly),
	newer(warned("tres-bind", 0, reqArg, bindGPU), "newer"),
	newer(on("tres-per-task", 0, reqArg, "gres/gpu[:type]=N (or gres/gpu:N) as --gpus-per-task, cpu=N as -c; other TRES are warned", setTRESPerTask), "newer"),
	refused("uid", 0, reqArg, "--uid: tasks run as the job's user; only root may change it"),
	on("unbuffered", 'u', noArg, "what Sluice's srun always does: tasks' output is forwarded as they write it (with -l, whole lines)", nil),
	on("usage", 0, noArg, "prints a short usage and exits", showUsage),
	warned("use-min-nodes", 0, noArg, allocOnly),
	on("verbose", 'v', noArg, "says where each node's tasks are launched (srun: launching StepId=J.S on host H, N tasks: [ids])", setVerbose),
	on("version", 'V', noArg, "prints the Slurm release Sluice's srun follows and exits", showVersion),
	on("wait", 'W', reqArg, "SEC seconds after the first task ends, the others get SIGTERM (then SIGKILL after KillWait); 0: no limit", setWait),
	warned("wckey", 0, reqArg, allocOnly),
	newer(on("whole", 0, noArg, "what every Sluice step does: its tasks use the whole of each node's allocation", setWhole), "newer"),
	refused("x11", 0, optArg, "--x11: X11 forwarding is not available"),
	newer(on("external-launcher", 0, noArg, "the step runs as any other: Sluice's steps overlap (an MPI launcher's daemons start with it)", setOverlap), "newer"),
	newer(warned("oom-kill-step", 0, optArg, "the kubelet's OOM handling applies to the pod"), "newer"),

	// pyxis's options (a SPANK plugin, not Slurm's own).
	newer(refused("container-image", 0, reqArg, "--container-image: "+pyxis), "pyxis"),
	newer(refused("container-mounts", 0, reqArg, "--container-mounts: "+pyxis+"; its volumes are the pod's"), "pyxis"),
	newer(refused("container-workdir", 0, reqArg, "--container-workdir: "+pyxis+"; use -D for the step's directory"), "pyxis"),
	newer(refused("container-name", 0, reqArg, "--container-name: "+pyxis), "pyxis"),
	newer(refused("container-save", 0, reqArg, "--container-save: "+pyxis), "pyxis"),
	newer(refused("container-mount-home", 0, noArg, "--container-mount-home: "+pyxis), "pyxis"),
	newer(refused("no-container-mount-home", 0, noArg, "--no-container-mount-home: "+pyxis), "pyxis"),
	newer(refused("container-remap-root", 0, noArg, "--container-remap-root: "+pyxis), "pyxis"),
	newer(refused("no-container-remap-root", 0, noArg, "--no-container-remap-root: "+pyxis), "pyxis"),
	newer(refused("container-entrypoint", 0, noArg, "--container-entrypoint: "+pyxis), "pyxis"),
	newer(refused("no-container-entrypoint", 0, noArg, "--no-container-entrypoint: "+pyxis), "pyxis"),
	newer(refused("container-writable", 0, noArg, "--container-writable: "+pyxis), "pyxis"),
	newer(refused("container-readonly", 0, noArg, "--container-readonly: "+pyxis), "pyxis"),
	newer(refused("container-env", 0, reqArg, "--container-env: "+pyxis+"; use --export"), "pyxis"),
}
