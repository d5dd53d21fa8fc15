package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// srunOptions are what srun's options ask of a step (srunTable says what
// each option does).
type srunOptions struct {
	ntasks, nodes, perNode   int
	gpusPerTask, cpusPerTask int
	label, killOnBadExit     bool
	export                   string // ALL (default), NONE, or a list
	output, errorFile        string
	name                     string
	signal                   *sbatch.Signal // --signal
	argv                     []string

	// mpi is --mpi (default SLURM_MPI_TYPE, then "none"): "none", "pmi2"
	// or "pmix". The launcher's PMI reads it.
	mpi                string
	chdir              string        // -D, as given
	nodelist, exclude  []string      // -w (or -F), -x: host names
	relative           int           // -r; -1: none
	cyclic             bool          // --distribution=cyclic
	distribution       string        // -m's layout over nodes as done ("block", "cyclic"); "": not given
	wait               time.Duration // -W; 0: none
	timeLimit          time.Duration // -t; 0: none
	input              string        // -i: "" (task 0), "none", "all", a task id or a file pattern
	appendOutput       bool          // --open-mode=append (default: SLURM_OPEN_MODE)
	openModeSet        bool          // --open-mode given: the tasks' SLURM_OPEN_MODE says it
	overcommit         bool          // -O
	overlap, exclusive bool
	exact, whole       bool
	quiet              bool // -Q
	verbose            int  // -v, one per v
	prolog, epilog     string
	jobID              string // --jobid

	// Resource asks, checked against the job's allocation (planStep).
	gpus, gpusPerNode      ask // --gpus, --gpus-per-node (and --gres=gpu)
	mem, memPerCPU, memGPU ask // MiB
	cpusPerGPU             ask
	otherGRES              []string // --gres entries other than gpu, as given

	// print is what --help, --usage, --version and --mpi=list print on
	// stdout; srun then exits 0 without a step.
	print string
	help  bool
}

// ask is a resource option as given: its flag (for messages) and value.
type ask struct {
	flag string
	n    int64
}

func (a ask) set() bool { return a.flag != "" }

// srunParser is parseSrun's state while it reads one option.
type srunParser struct {
	o        *srunOptions
	getenv   func(string) string
	warnings []string
	flag     string // the option as given ("--cpu-bind=cores"), for messages
	hasValue bool   // an optArg option was given a value
}

func (p *srunParser) warn(format string, args ...any) {
	p.warnings = append(p.warnings, p.flag+": "+fmt.Sprintf(format, args...))
}

// usageError is a mistake in srun's command line, which srun reports as
// getopt does ("srun: unrecognized option '--bogus'"), without "error:".
type usageError string

func (e usageError) Error() string { return string(e) }

// parseSrun reads srun's options up to the command, as srun does: the
// first word that is not an option starts the command. It returns the
// warnings the options call for (one line each, without "srun: warning: ").
func parseSrun(args []string, getenv func(string) string) (*srunOptions, []string, error) {
	o := &srunOptions{export: "ALL", relative: -1, mpi: "none"}
	p := &srunParser{o: o, getenv: getenv}
	if v := getenv("SRUN_CPUS_PER_TASK"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, nil, fmt.Errorf("SRUN_CPUS_PER_TASK=%q is not a positive number", v)
		}
		o.cpusPerTask = n
	}
	if v := getenv("SLURM_OPEN_MODE"); v != "" {
		o.appendOutput = strings.HasPrefix(strings.ToLower(v), "a") // sbatch --open-mode exports it
	}
	if v := getenv("SLURM_MPI_TYPE"); v != "" {
		p.flag = "SLURM_MPI_TYPE=" + v
		if err := setMPI(p, v); err != nil {
			return nil, nil, err
		}
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
		var opt *srunOpt
		var value string
		var hasValue bool
		if long, ok := strings.CutPrefix(a, "--"); ok {
			name, v, eq := strings.Cut(long, "=")
			var err error
			if opt, err = lookupSrun(name); err != nil {
				return nil, nil, err
			}
			value, hasValue = v, eq
			if hasValue && opt.arg == noArg {
				return nil, nil, usageError(fmt.Sprintf("option '--%s' doesn't allow an argument", opt.long))
			}
		} else {
			// -n4 -l: short options may be bundled, a value joins the last.
			for j := 1; j < len(a); j++ {
				c := a[j]
				opt = lookupSrunShort(c)
				if opt == nil {
					return nil, nil, usageError(fmt.Sprintf("invalid option -- '%c'", c))
				}
				if opt.arg == noArg && j+1 < len(a) {
					if err := p.apply(opt, "-"+string(c), "", false); err != nil {
						return nil, nil, err
					}
					continue
				}
				if j+1 < len(a) {
					value, hasValue = a[j+1:], true
				}
				break
			}
		}
		if opt.arg == reqArg && !hasValue {
			if i+1 >= len(args) {
				if strings.HasPrefix(a, "--") {
					return nil, nil, usageError(fmt.Sprintf("option '--%s' requires an argument", opt.long))
				}
				return nil, nil, usageError(fmt.Sprintf("option requires an argument -- '%c'", opt.short))
			}
			i++
			value, hasValue = args[i], true
		}
		flag := "--" + opt.long
		if hasValue {
			flag += "=" + value
		}
		if err := p.apply(opt, flag, value, hasValue); err != nil {
			return nil, nil, err
		}
	}
	if o.help {
		o.print = srunHelp()
	}
	if o.print != "" {
		return o, nil, nil
	}
	if len(o.argv) == 0 {
		return nil, nil, fmt.Errorf("No command given to execute.")
	}
	if o.exclusive && o.overlap {
		return nil, nil, fmt.Errorf("--exclusive and --overlap are mutually exclusive")
	}
	if o.exact && o.whole {
		return nil, nil, fmt.Errorf("--exact and --whole are mutually exclusive.")
	}
	return o, p.warnings, nil
}

// apply applies one option, as the table says.
func (p *srunParser) apply(opt *srunOpt, flag, value string, hasValue bool) error {
	p.flag, p.hasValue = flag, hasValue
	if opt.apply != nil {
		return opt.apply(p, value)
	}
	switch opt.support {
	case slurmapi.Warned:
		p.warnings = append(p.warnings, flag+": "+opt.note)
	case slurmapi.Refused:
		return fmt.Errorf("%s", opt.note)
	}
	return nil
}

// lookupSrun finds a long option by name, or by an unambiguous prefix of
// it, as getopt_long does.
func lookupSrun(name string) (*srunOpt, error) {
	var prefix []*srunOpt
	for i := range srunTable {
		o := &srunTable[i]
		if o.long == name {
			return o, nil
		}
		if name != "" && strings.HasPrefix(o.long, name) {
			prefix = append(prefix, o)
		}
	}
	switch len(prefix) {
	case 0:
		return nil, usageError(fmt.Sprintf("unrecognized option '--%s'", name))
	case 1:
		return prefix[0], nil
	}
	names := make([]string, len(prefix))
	for i, o := range prefix {
		names[i] = "'--" + o.long + "'"
	}
	return nil, usageError(fmt.Sprintf("option '--%s' is ambiguous; possibilities: %s", name, strings.Join(names, " ")))
}

func lookupSrunShort(c byte) *srunOpt {
	for i := range srunTable {
		if srunTable[i].short == c {
			return &srunTable[i]
		}
	}
	return nil
}

// The apply functions of srunTable's rows.

func positive(p *srunParser, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("Invalid numeric value %q for %s.", v, strings.SplitN(p.flag, "=", 2)[0])
	}
	return n, nil
}

func setNTasks(p *srunParser, v string) (err error) {
	p.o.ntasks, err = positive(p, v)
	return err
}

func setNodes(p *srunParser, v string) (err error) {
	lo, _, _ := strings.Cut(v, "-") // min[-max]: the step takes the minimum
	p.o.nodes, err = positive(p, lo)
	return err
}

func setPerNode(p *srunParser, v string) (err error) {
	p.o.perNode, err = positive(p, v)
	return err
}

func setCPUsPerTask(p *srunParser, v string) (err error) {
	p.o.cpusPerTask, err = positive(p, v)
	return err
}

func setGPUsPerTask(p *srunParser, v string) error {
	_, n, err := sbatch.ParseGPUs(v)
	if err != nil {
		return fmt.Errorf("%s: %v", p.flag, err)
	}
	p.o.gpusPerTask = n
	return nil
}

func setTRESPerTask(p *srunParser, v string) error {
	for _, item := range strings.Split(v, ",") {
		name, count, ok := strings.Cut(item, "=")
		switch {
		case name == "cpu" && ok:
			n, err := positive(p, count)
			if err != nil {
				return err
			}
			p.o.cpusPerTask = n
		case strings.HasPrefix(item, "gres/gpu") || strings.HasPrefix(item, "gpu"):
			g, err := sbatch.ParseGRES(item)
			if err != nil || len(g) != 1 || g[0].Count < 1 {
				return fmt.Errorf("Invalid --tres-per-task specification %q", v)
			}
			p.o.gpusPerTask = int(g[0].Count)
		default:
			p.warn("%s is not given to the tasks: only gres/gpu and cpu are", item)
		}
	}
	return nil
}

func setLabel(p *srunParser, _ string) error { p.o.label = true; return nil }

func setKillOnBadExit(p *srunParser, v string) error {
	p.o.killOnBadExit = !p.hasValue || v != "0"
	return nil
}

func setExport(p *srunParser, v string) error  { p.o.export = v; return nil }
func setOutput(p *srunParser, v string) error  { p.o.output = v; return nil }
func setError(p *srunParser, v string) error   { p.o.errorFile = v; return nil }
func setName(p *srunParser, v string) error    { p.o.name = v; return nil }
func setChdir(p *srunParser, v string) error   { p.o.chdir = v; return nil }
func setQuiet(p *srunParser, _ string) error   { p.o.quiet = true; return nil }
func setVerbose(p *srunParser, _ string) error { p.o.verbose++; return nil }
func setOverlap(p *srunParser, _ string) error { p.o.overlap = true; return nil }
func setWhole(p *srunParser, _ string) error   { p.o.whole = true; return nil }
func setOvercommit(p *srunParser, _ string) error {
	p.o.overcommit = true
	return nil
}

func setSignal(p *srunParser, v string) error {
	sig, err := sbatch.ParseSignal(v)
	if err == nil && sig.Batch {
		err = fmt.Errorf("--signal=%s: B: (the batch shell) is sbatch's; srun signals its step's tasks", v)
	}
	p.o.signal = &sig
	return err
}

func setExclusive(p *srunParser, v string) error {
	if p.hasValue && v != "user" && v != "mcs" {
		return fmt.Errorf("Invalid --exclusive specification")
	}
	p.o.exclusive = true
	p.warn("%s", sharedStep)
	return nil
}

// hosts reads a host list, or the file of host names that -w, -x and -F
// take (a value with a "/" in it), one or more a line.
func hosts(p *srunParser, v string) ([]string, error) {
	if strings.Contains(v, "/") {
		b, err := os.ReadFile(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p.flag, err)
		}
		v = strings.Join(strings.Fields(strings.ReplaceAll(string(b), ",", " ")), ",")
	}
	names, err := sbatch.ParseNodeList(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p.flag, err)
	}
	return names, nil
}

func setNodelist(p *srunParser, v string) (err error) {
	p.o.nodelist, err = hosts(p, v)
	return err
}

func setNodefile(p *srunParser, v string) (err error) {
	if !strings.Contains(v, "/") {
		v = "./" + v // always a file
	}
	p.o.nodelist, err = hosts(p, v)
	return err
}

func setExclude(p *srunParser, v string) (err error) {
	p.o.exclude, err = hosts(p, v)
	return err
}

func setRelative(p *srunParser, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return fmt.Errorf("Invalid numeric value %q for --relative.", v)
	}
	p.o.relative = n
	return nil
}

// setDistribution reads --distribution: the first level (nodes) decides
// the task ids each node gets; the others place tasks on sockets and
// cores, which Sluice does not do.
func setDistribution(p *srunParser, v string) error {
	spec, pack, _ := strings.Cut(v, ",")
	levels := strings.Split(spec, ":")
	valid := func(l string, first bool) bool {
		switch l {
		case "*", "block", "cyclic":
			return true
		case "fcyclic":
			return !first
		case "arbitrary":
			return first
		}
		return first && strings.HasPrefix(l, "plane=")
	}
	if len(levels) > 3 || (pack != "" && !strings.EqualFold(pack, "pack") && !strings.EqualFold(pack, "nopack")) {
		return fmt.Errorf("Invalid --distribution specification")
	}
	for i, l := range levels {
		if !valid(l, i == 0) {
			return fmt.Errorf("Invalid --distribution specification")
		}
	}
	p.o.distribution = "block"
	switch first := levels[0]; {
	case first == "cyclic":
		p.o.cyclic, p.o.distribution = true, "cyclic"
	case first == "arbitrary":
		p.warn("tasks are placed in blocks (block): arbitrary placement needs SLURM_HOSTFILE, which Sluice does not read")
	case strings.HasPrefix(first, "plane="):
		if n, err := strconv.Atoi(first[len("plane="):]); err != nil || n < 1 {
			return fmt.Errorf("Invalid --distribution specification")
		}
		p.warn("tasks are placed in blocks (block): plane distribution is not done")
	}
	if len(levels) > 1 || pack != "" {
		p.warn("tasks are placed on nodes only: Sluice does not place them on sockets or cores")
	}
	return nil
}

func setWait(p *srunParser, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return fmt.Errorf("Invalid numeric value %q for --wait.", v)
	}
	p.o.wait = time.Duration(n) * time.Second
	return nil
}

func setTime(p *srunParser, v string) error {
	d, err := sbatch.ParseTimeLimit(v)
	if err != nil {
		return fmt.Errorf("Invalid --time specification")
	}
	if d > 0 {
		p.o.timeLimit = d
	}
	return nil
}

func setInput(p *srunParser, v string) error {
	if v == "" {
		return fmt.Errorf("Invalid --input specification")
	}
	p.o.input = v
	return nil
}

func setOpenMode(p *srunParser, v string) error {
	p.o.openModeSet = true
	switch {
	case strings.HasPrefix("append", strings.ToLower(v)) && v != "":
		p.o.appendOutput = true
	case strings.HasPrefix("truncate", strings.ToLower(v)) && v != "":
		p.o.appendOutput = false
	default:
		return fmt.Errorf("Invalid --open-mode specification")
	}
	return nil
}

// mpiTypes are the --mpi values Sluice's launcher knows.
var mpiTypes = []string{"none", "pmi2", "pmix"}

var pmixVersion = regexp.MustCompile(`^pmix_v[0-9]+$`)

func setMPI(p *srunParser, v string) error {
	switch {
	case v == "list":
		p.o.print = "MPI plugin types are...\n\t" + strings.Join(mpiTypes, "\n\t") + "\n"
	case slices.Contains(mpiTypes, v):
		p.o.mpi = v
	case pmixVersion.MatchString(v):
		p.o.mpi = "pmix"
	default:
		return fmt.Errorf("Invalid MPI type '%s', --mpi=list for acceptable types", v)
	}
	return nil
}

func setProlog(p *srunParser, v string) error { p.o.prolog = v; return nil }
func setEpilog(p *srunParser, v string) error { p.o.epilog = v; return nil }

func setJobID(p *srunParser, v string) error {
	id := strings.TrimSpace(v)
	if n, err := strconv.ParseUint(id, 10, 32); err != nil || n == 0 {
		return fmt.Errorf("Invalid numeric value %q for --jobid.", v)
	}
	p.o.jobID = id
	return nil
}

func setHetGroup(p *srunParser, v string) error {
	if strings.TrimSpace(v) != "0" {
		return fmt.Errorf("--het-group=%s: heterogeneous jobs are not supported; this job has one component, 0", v)
	}
	return nil
}

// sameAsJob is the apply of an allocation option whose value the job's
// environment names (-A, -p, -q): warned only when it differs.
func sameAsJob(env string) func(*srunParser, string) error {
	return func(p *srunParser, v string) error {
		if have := p.getenv(env); have == "" || !strings.EqualFold(have, v) {
			p.warn("%s", allocOnly)
		}
		return nil
	}
}

func gpuAsk(p *srunParser, v string, dst *ask) error {
	_, n, err := sbatch.ParseGPUs(v)
	if err != nil {
		return fmt.Errorf("%s: %v", p.flag, err)
	}
	*dst = ask{p.flag, int64(n)}
	return nil
}

func setGPUs(p *srunParser, v string) error { return gpuAsk(p, v, &p.o.gpus) }
func setGPUsPerNode(p *srunParser, v string) error {
	return gpuAsk(p, v, &p.o.gpusPerNode)
}

func setGRES(p *srunParser, v string) error {
	if strings.EqualFold(v, "none") {
		return nil
	}
	gs, err := sbatch.ParseGRES(v)
	if err != nil {
		return fmt.Errorf("Invalid generic resource (gres) specification")
	}
	for _, g := range gs {
		if g.Name == "gpu" {
			p.o.gpusPerNode = ask{p.flag, g.Count}
			continue
		}
		p.o.otherGRES = append(p.o.otherGRES, g.Name)
	}
	if len(p.o.otherGRES) > 0 {
		p.warn("the step uses the job's %s as they are", strings.Join(p.o.otherGRES, ", "))
	}
	return nil
}

func memAsk(p *srunParser, v string, dst *ask) error {
	n, err := sbatch.ParseMemory(v)
	if err != nil {
		return fmt.Errorf("Invalid %s specification", strings.SplitN(p.flag, "=", 2)[0])
	}
	*dst = ask{p.flag, n}
	return nil
}

func setMem(p *srunParser, v string) error       { return memAsk(p, v, &p.o.mem) }
func setMemPerCPU(p *srunParser, v string) error { return memAsk(p, v, &p.o.memPerCPU) }
func setMemPerGPU(p *srunParser, v string) error { return memAsk(p, v, &p.o.memGPU) }

func setCPUsPerGPU(p *srunParser, v string) error {
	n, err := positive(p, v)
	p.o.cpusPerGPU = ask{p.flag, int64(n)}
	return err
}

func showHelp(p *srunParser, _ string) error {
	p.o.help = true // printed by parseSrun: the help is made from the table
	return nil
}

func showUsage(p *srunParser, _ string) error {
	p.o.print = "Usage: srun [OPTIONS...] executable [args...]\n(inside a Sluice job; srun --help lists the options)\n"
	return nil
}

// SlurmRelease is the Slurm release whose srun Sluice's follows (its
// option list: testdata/srun-options.txt).
const SlurmRelease = "22.05.8"

func showVersion(p *srunParser, _ string) error {
	p.o.print = "slurm " + SlurmRelease + " (sluice)\n"
	return nil
}

// srunHelp lists the options Sluice's srun honours.
func srunHelp() string {
	var b strings.Builder
	b.WriteString("Usage: srun [OPTIONS...] executable [args...]\n\nOptions Sluice's srun honours inside a job (others are warned about or refused):\n")
	for _, o := range srunTable {
		if o.support != slurmapi.Honoured {
			continue
		}
		fmt.Fprintf(&b, "  %-28s %s\n", optionName(o), o.note)
	}
	return b.String()
}

// optionName is an option as the man page names it: "-n, --ntasks=VALUE".
func optionName(o srunOpt) string {
	s := "--" + o.long
	switch o.arg {
	case reqArg:
		s += "=VALUE"
	case optArg:
		s += "[=VALUE]"
	}
	if o.short != 0 {
		s = "-" + string(o.short) + ", " + s
	}
	return s
}

// allocation is what srun knows of the job's resources, from its pod's
// environment: Slurm's own variables where the pod has them
// (SLURM_JOB_CPUS_PER_NODE, SLURM_CPUS_ON_NODE, SLURM_MEM_PER_NODE,
// SLURM_MEM_PER_CPU, SLURM_GPUS_ON_NODE), else what the pod factory
// sets: SLURM_NTASKS_PER_NODE x SLURM_CPUS_PER_TASK CPUs (the pod's CPU
// request) and the GPUs of CUDA_VISIBLE_DEVICES. Nodes are taken alike
// (every pod of a job asks the same) unless SLURM_JOB_CPUS_PER_NODE says
// otherwise.
type allocation struct {
	cpus   []int // by node index; nil: unknown
	gpus   int   // per node
	gpusOK bool  // gpus is known
	memMiB int64 // per node; 0: unknown
}

func allocationFromEnv(job *Job, getenv func(string) string, environ []string) allocation {
	var a allocation
	nodes := len(job.Hosts)
	if per := slurmapi.ExpandCounts(getenv("SLURM_JOB_CPUS_PER_NODE")); len(per) == nodes {
		a.cpus = per
	} else {
		n, _ := strconv.Atoi(getenv("SLURM_CPUS_ON_NODE"))
		if n <= 0 {
			tpn, _ := strconv.Atoi(getenv("SLURM_NTASKS_PER_NODE"))
			cpt, _ := strconv.Atoi(getenv("SLURM_CPUS_PER_TASK"))
			n = tpn * max(cpt, 1)
		}
		if n > 0 {
			a.cpus = slices.Repeat([]int{n}, nodes)
		}
	}
	if v := getenv("SLURM_GPUS_ON_NODE"); v != "" {
		a.gpus, _ = strconv.Atoi(v)
		a.gpusOK = true
	} else {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, "CUDA_VISIBLE_DEVICES="); ok {
				a.gpus, a.gpusOK = len(split(v)), true
			}
		}
	}
	if m, err := strconv.ParseInt(getenv("SLURM_MEM_PER_NODE"), 10, 64); err == nil && m > 0 {
		a.memMiB = m
	} else if m, err := strconv.ParseInt(getenv("SLURM_MEM_PER_CPU"), 10, 64); err == nil && m > 0 && a.cpus != nil {
		a.memMiB = m * int64(slices.Min(a.cpus))
	}
	return a
}

// stepPlan is where a step's tasks run: the step's nodes (indices into
// the job's hosts) and each one's task ids.
type stepPlan struct {
	nodes []int
	tasks [][]int
}

func (p *stepPlan) counts() []int {
	c := make([]int, len(p.tasks))
	for i, t := range p.tasks {
		c[i] = len(t)
	}
	return c
}

// stepError is Slurm's refusal of a step: "Unable to create step for job
// 42: More processors requested than permitted".
func stepError(job *Job, why string) error {
	return fmt.Errorf("Unable to create step for job %s: %s", job.ID, why)
}

// planStep places the step on the allocation's nodes as srun and
// slurmctld would: -w, -x and -r choose the nodes, -N, -n and
// --ntasks-per-node the counts, --distribution the task ids. A step may
// use at most the job's CPUs on each node (tasks x CPUs per task, unless
// -O) and its GPUs and memory; it returns Slurm's error otherwise, and
// the warnings for resource options that ask for less, or other, than
// the job has (the step gets the job's allocation as it is).
func planStep(o *srunOptions, job *Job, a allocation) (*stepPlan, []string, error) {
	var warns []string
	if o.jobID != "" && o.jobID != job.ID {
		return nil, nil, fmt.Errorf("--jobid=%s: this srun runs steps in job %s only; from your own shell, sluice srun --jobid=%s runs a step in job %s", o.jobID, job.ID, o.jobID, o.jobID)
	}
	index := make(map[string]int, len(job.Hosts))
	for i, h := range job.Hosts {
		index[h] = i
	}
	start := 0
	if o.relative >= 0 {
		if o.relative >= len(job.Hosts) {
			return nil, nil, fmt.Errorf("--relative=%d: the allocation's nodes are 0-%d", o.relative, len(job.Hosts)-1)
		}
		if len(o.nodelist) > 0 {
			return nil, nil, fmt.Errorf("--relative and --nodelist are mutually exclusive")
		}
		start = o.relative
	}
	excluded := map[int]bool{}
	for _, h := range o.exclude {
		if i, ok := index[h]; ok {
			excluded[i] = true
		}
	}
	var pool []int
	for i := start; i < len(job.Hosts); i++ {
		if !excluded[i] {
			pool = append(pool, i)
		}
	}
	chosen := pool
	nodes := o.nodes
	if len(o.nodelist) > 0 {
		var required []int
		for _, h := range o.nodelist {
			i, ok := index[h]
			if !ok || excluded[i] {
				return nil, nil, stepError(job, "Requested node configuration is not available")
			}
			if !slices.Contains(required, i) {
				required = append(required, i)
			}
		}
		want := len(required)
		if o.nodes > 0 {
			want = o.nodes
		}
		if want < len(required) {
			warns = append(warns, fmt.Sprintf("Required nodelist includes more nodes than permitted by max-node count (%d > %d). Eliminating nodes from the nodelist.", len(required), want))
			required = required[:want]
		}
		for _, i := range pool {
			if len(required) < want && !slices.Contains(required, i) {
				required = append(required, i)
			}
		}
		slices.Sort(required)
		chosen, nodes = required, want
	}
	if nodes > len(chosen) {
		return nil, nil, fmt.Errorf("Minimum node count > allocated node count (%d > %d)", nodes, len(chosen))
	}
	if len(chosen) == 0 {
		return nil, nil, stepError(job, "Requested node configuration is not available")
	}
	lo := *o
	lo.nodes = nodes
	counts, err := layout(&lo, len(chosen), job.JobTasks)
	if err != nil {
		return nil, nil, err
	}
	plan := &stepPlan{nodes: chosen[:len(counts)], tasks: placeTasks(counts, o.cyclic)}
	cpt := max(o.cpusPerTask, 1)
	for i, c := range counts {
		if a.cpus != nil && !o.overcommit && c*cpt > a.cpus[plan.nodes[i]] {
			return nil, nil, stepError(job, "More processors requested than permitted")
		}
	}
	w, err := checkResources(o, job, a, plan)
	return plan, append(warns, w...), err
}

// checkResources compares the step's GPU, memory and CPU-per-GPU asks
// with the job's allocation: more is Slurm's refusal, less or other a
// warning (the tasks get what the job has).
func checkResources(o *srunOptions, job *Job, a allocation, plan *stepPlan) ([]string, error) {
	var warns []string
	say := func(k ask, format string, args ...any) {
		warns = append(warns, k.flag+": "+fmt.Sprintf(format, args...))
	}
	gres := stepError(job, "Invalid generic resource (gres) specification")
	perNode := slices.Max(plan.counts())
	minCPUs := 0
	if a.cpus != nil {
		minCPUs = a.cpus[plan.nodes[0]]
		for _, n := range plan.nodes {
			minCPUs = min(minCPUs, a.cpus[n])
		}
	}
	if o.gpusPerTask > 0 && a.gpusOK && o.gpusPerTask*perNode > a.gpus {
		return nil, gres
	}
	if k := o.gpusPerNode; k.set() {
		switch {
		case !a.gpusOK:
			say(k, "the step's tasks see their node's GPUs, whatever their count")
		case k.n > int64(a.gpus):
			return nil, gres
		case k.n < int64(a.gpus):
			say(k, "the step's tasks see all %d GPUs of their node (split them with --gpus-per-task)", a.gpus)
		}
	}
	if k := o.gpus; k.set() {
		total := int64(a.gpus * len(plan.nodes))
		switch {
		case !a.gpusOK:
			say(k, "the step's tasks see their node's GPUs, whatever their count")
		case k.n > total:
			return nil, gres
		case k.n < total:
			say(k, "the step's tasks see all %d GPUs of their nodes (split them with --gpus-per-task)", total)
		}
	}
	if k := o.cpusPerGPU; k.set() {
		switch {
		case a.cpus == nil || !a.gpusOK:
			say(k, "the step's tasks share the pod's CPUs")
		case k.n*int64(a.gpus) > int64(minCPUs):
			return nil, stepError(job, "More processors requested than permitted")
		case k.n*int64(a.gpus) < int64(minCPUs):
			say(k, "the step's tasks share the pod's %d CPUs", minCPUs)
		}
	}
	for _, m := range []struct {
		k    ask
		need int64
	}{{o.mem, o.mem.n}, {o.memPerCPU, o.memPerCPU.n * int64(perNode*max(o.cpusPerTask, 1))}, {o.memGPU, o.memGPU.n * int64(max(a.gpus, 1))}} {
		switch {
		case !m.k.set() || m.k.n == 0: // 0: all of the job's memory
		case a.memMiB == 0:
			say(m.k, "the step uses the job's memory (the pod's limit)")
		case m.need > a.memMiB:
			return nil, stepError(job, "Memory required by task is not available")
		case m.need < a.memMiB:
			say(m.k, "the step uses the job's memory, %d MiB per node (the pod's limit); Sluice sets no smaller limit for a step", a.memMiB)
		}
	}
	return warns, nil
}

// layout decides how many of the step's candidate nodes it uses and how
// many tasks each runs (the first nodes taking the remainder). jobTasks
// is the job's SLURM_NTASKS, the default task count as in srun.
func layout(o *srunOptions, allocNodes, jobTasks int) ([]int, error) {
	n, nodes, k := o.ntasks, o.nodes, o.perNode
	if nodes > allocNodes {
		return nil, fmt.Errorf("Minimum node count > allocated node count (%d > %d)", nodes, allocNodes)
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

// placeTasks gives each node its task ids: consecutive ones (block), or
// one node after the other in turn (cyclic), a full node skipped.
func placeTasks(counts []int, cyclic bool) [][]int {
	tasks := make([][]int, len(counts))
	id := 0
	if !cyclic {
		for i, c := range counts {
			for range c {
				tasks[i] = append(tasks[i], id)
				id++
			}
		}
		return tasks
	}
	for left := sum(counts); id < left; {
		for i, c := range counts {
			if len(tasks[i]) < c {
				tasks[i] = append(tasks[i], id)
				id++
			}
		}
	}
	return tasks
}

// stepCwd is the tasks' working directory: srun's, or -D's (relative to
// srun's).
func stepCwd(o *srunOptions, cwd string) string {
	if o.chdir == "" {
		return cwd
	}
	if filepath.IsAbs(o.chdir) {
		return o.chdir
	}
	return filepath.Join(cwd, o.chdir)
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
