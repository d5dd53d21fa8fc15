package sbatch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Options is what sbatch's options ask for. Set records the long names of
// the options given, so that a caller can let explicit values (REST
// fields, command-line flags) win over directives.
type Options struct {
	Partition, Account, QOS, JobName   string
	Output, Error, Input, Chdir        string
	Dependency, Array, Comment, Export string
	ContainerImage                     string
	Reservation                        string // --reservation: the advance reservation the job runs in
	Nodes, MaxNodes                    int
	NTasks, NTasksPerNode, CPUsPerTask int
	Mem, MemPerCPU, MemPerGPU          int64 // MiB
	GRES                               []GRES
	GPUs, GPUsPerNode, GPUsPerTask     string // "[type:]count"
	Time                               time.Duration
	Requeue, Hold                      bool
	Nice                               int64  // taken off the job's priority
	Priority                           int64  // operators only; checked by the server
	Wrap                               string // --wrap: the command line's script body
	Begin                              string // kept as text; ParseBegin needs the submit time
	// Placement: --constraint, --nodelist and --exclude as given (checked when parsed),
	// --exclusive, and --switches' count.
	Constraint, NodeList, Exclude string
	Exclusive                     bool
	Switches                      int
	SwitchesWait                  time.Duration // --switches=N@MAX_TIME; 0: none
	SpreadJob                     bool          // --spread-job
	Signal                        *Signal       // --signal; nil: none
	OpenMode                      string        // --open-mode: "append", "truncate"; "": the default (truncate)
	Set                           map[string]bool
}

// ArgKind says whether an option takes a value.
type ArgKind int

// An option takes no value (--hold), or requires one (--time=1:00).
const (
	NoArg ArgKind = iota
	RequiredArg
)

// Option is one entry of sbatch's option table.
type Option struct {
	Long  string
	Short byte // 0 if none
	Arg   ArgKind
	Help  string
	// apply stores the value; nil for options Sluice accepts but ignores
	// (they get a warning, so real scripts keep working).
	apply func(o *Options, v string) error
}

// Table is sbatch's option table as Sluice implements it, in the order
// `sluice sbatch --help` lists it.
var Table = []Option{
	{"partition", 'p', RequiredArg, "partition requested (a,b: the first listed where the job can start)", str(func(o *Options) *string { return &o.Partition })},
	{"account", 'A', RequiredArg, "charge job to specified account", str(func(o *Options) *string { return &o.Account })},
	{"qos", 'q', RequiredArg, "quality of service", str(func(o *Options) *string { return &o.QOS })},
	{"nodes", 'N', RequiredArg, "number of nodes on which to run (N = min[-max])", setNodes},
	{"ntasks", 'n', RequiredArg, "number of tasks to run", count(func(o *Options) *int { return &o.NTasks })},
	{"ntasks-per-node", 0, RequiredArg, "number of tasks to invoke on each node", count(func(o *Options) *int { return &o.NTasksPerNode })},
	{"cpus-per-task", 'c', RequiredArg, "number of cpus required per task", count(func(o *Options) *int { return &o.CPUsPerTask })},
	{"mem", 0, RequiredArg, "minimum amount of real memory per node", mem(func(o *Options) *int64 { return &o.Mem })},
	{"mem-per-cpu", 0, RequiredArg, "maximum amount of real memory per allocated cpu", mem(func(o *Options) *int64 { return &o.MemPerCPU })},
	{"mem-per-gpu", 0, RequiredArg, "real memory required per allocated GPU", mem(func(o *Options) *int64 { return &o.MemPerGPU })},
	{"gres", 0, RequiredArg, "required generic resources (gpu[:type]:N, shard:N, mps:P)", setGRES},
	{"gpus", 'G', RequiredArg, "count of GPUs required for the job ([type:]N)", gpus(func(o *Options) *string { return &o.GPUs })},
	{"gpus-per-node", 0, RequiredArg, "number of GPUs required per allocated node", gpus(func(o *Options) *string { return &o.GPUsPerNode })},
	{"gpus-per-task", 0, RequiredArg, "number of GPUs required per spawned task", gpus(func(o *Options) *string { return &o.GPUsPerTask })},
	{"time", 't', RequiredArg, "time limit", setTime},
	{"job-name", 'J', RequiredArg, "name of job", str(func(o *Options) *string { return &o.JobName })},
	{"output", 'o', RequiredArg, "file for batch script's standard output", str(func(o *Options) *string { return &o.Output })},
	{"error", 'e', RequiredArg, "file for batch script's standard error", str(func(o *Options) *string { return &o.Error })},
	{"input", 'i', RequiredArg, "file for batch script's standard input", str(func(o *Options) *string { return &o.Input })},
	{"chdir", 'D', RequiredArg, "change working directory", str(func(o *Options) *string { return &o.Chdir })},
	{"requeue", 0, NoArg, "if set, permit the job to be requeued", func(o *Options, _ string) error { o.Requeue = true; return nil }},
	{"no-requeue", 0, NoArg, "if set, do not permit the job to be requeued", func(o *Options, _ string) error { o.Requeue = false; return nil }},
	{"hold", 'H', NoArg, "submit job in held state", func(o *Options, _ string) error { o.Hold = true; return nil }},
	{"dependency", 'd', RequiredArg, "defer job until condition on jobid is satisfied", setDependency},
	{"array", 'a', RequiredArg, "job array index values (e.g. 0-15%4)", setArray},
	{"begin", 'b', RequiredArg, "defer job until HH:MM MM/DD/YY", str(func(o *Options) *string { return &o.Begin })},
	{"comment", 0, RequiredArg, "arbitrary comment", str(func(o *Options) *string { return &o.Comment })},
	{"reservation", 0, RequiredArg, "allocate resources from named reservation", str(func(o *Options) *string { return &o.Reservation })},
	{"export", 0, RequiredArg, "specify environment variables to export (ALL, NONE, VAR=val,...)", str(func(o *Options) *string { return &o.Export })},
	{"container-image", 0, RequiredArg, "container image to run the job in (pyxis)", str(func(o *Options) *string { return &o.ContainerImage })},
	// Accepted so that existing scripts run, but without effect here.
	{"mail-type", 0, RequiredArg, "ignored: no mail is sent", nil},
	{"mail-user", 0, RequiredArg, "ignored: no mail is sent", nil},
	{"exclusive", 0, NoArg, "allocate nodes in exclusive mode", func(o *Options, _ string) error { o.Exclusive = true; return nil }},
	{"constraint", 'C', RequiredArg, "specify a list of constraints (node features, & and |, one [a|b] group)", checked(ParseConstraintChoices, func(o *Options) *string { return &o.Constraint })},
	{"nodelist", 'w', RequiredArg, "request a specific list of hosts", checked(ParseNodeList, func(o *Options) *string { return &o.NodeList })},
	{"exclude", 'x', RequiredArg, "exclude a specific list of hosts", checked(ParseNodeList, func(o *Options) *string { return &o.Exclude })},
	{"spread-job", 0, NoArg, "spread the job over as many nodes as possible", func(o *Options, _ string) error { o.SpreadJob = true; return nil }},
	{"switches", 0, RequiredArg, "optimum switches and max time to wait for optimum (COUNT[@TIME])", setSwitches},
	{"distribution", 'm', RequiredArg, "ignored", nil},
	{"signal", 0, RequiredArg, "signal the job's steps (B: its batch shell) sig_time seconds before its time limit ([{R|B}:]SIG[@TIME])", setSignal},
	{"open-mode", 0, RequiredArg, "open the output and error files with append or truncate (default truncate)", setOpenMode},
	{"wckey", 0, RequiredArg, "ignored", nil},
	{"no-kill", 'k', NoArg, "ignored", nil},
	{"overcommit", 'O', NoArg, "ignored", nil},
	{"oversubscribe", 's', NoArg, "ignored", nil},
	{"quiet", 'Q', NoArg, "ignored", nil},
	{"verbose", 'v', NoArg, "ignored", nil},
	{"parsable", 0, NoArg, "ignored in scripts", nil},
	{"threads-per-core", 0, RequiredArg, "ignored", nil},
	{"hint", 0, RequiredArg, "ignored", nil},
	{"gpu-bind", 0, RequiredArg, "ignored", nil},
	{"cpu-bind", 0, RequiredArg, "ignored", nil},
	{"nice", 0, RequiredArg, "lower the job's priority by this adjustment (below 0: operators only)", setNice},
	{"tmp", 0, RequiredArg, "ignored", nil},
}

// Parse applies an argv (directive arguments or command-line flags) to a
// fresh Options. It stops at the first argument that is not an option
// (the script and its arguments on a command line) and returns the rest.
// Warnings name options accepted without effect.
func Parse(args []string) (opts *Options, rest []string, warnings []string, err error) {
	opts = &Options{Nodes: 0, Set: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return opts, args[i+1:], warnings, nil
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			return opts, args[i:], warnings, nil
		}
		var (
			opt      *Option
			value    string
			hasValue bool
		)
		if long, ok := strings.CutPrefix(arg, "--"); ok {
			name, v, eq := strings.Cut(long, "=")
			var refused *RefusedOption
			if opt, refused, err = lookupAny(name); err != nil {
				return nil, nil, nil, err
			}
			if refused != nil {
				return nil, nil, nil, refused.err()
			}
			value, hasValue = v, eq
		} else {
			var refused *RefusedOption
			if opt, refused, err = lookupAnyShort(arg[1]); err != nil {
				return nil, nil, nil, err
			}
			if refused != nil {
				return nil, nil, nil, refused.err()
			}
			if len(arg) > 2 {
				if opt.Arg == NoArg {
					return nil, nil, nil, fmt.Errorf("option -%c takes no value (got %q)", arg[1], arg)
				}
				value, hasValue = arg[2:], true
			}
		}
		if opt.Arg == RequiredArg && !hasValue {
			if i+1 >= len(args) {
				return nil, nil, nil, fmt.Errorf("option --%s requires a value", opt.Long)
			}
			i++
			value = args[i]
		}
		if opt.Arg == NoArg && hasValue {
			return nil, nil, nil, fmt.Errorf("option --%s takes no value", opt.Long)
		}
		if opt.apply == nil {
			warnings = append(warnings, fmt.Sprintf("--%s is accepted but has no effect in Sluice (%s)", opt.Long, opt.Help))
			continue
		}
		if err := opt.apply(opts, value); err != nil {
			return nil, nil, nil, fmt.Errorf("--%s: %w", opt.Long, err)
		}
		opts.Set[opt.Long] = true
	}
	return opts, nil, warnings, nil
}

func str(field func(*Options) *string) func(*Options, string) error {
	return func(o *Options, v string) error { *field(o) = v; return nil }
}

// checked stores a value that parse accepts.
func checked[T any](parse func(string) (T, error), field func(*Options) *string) func(*Options, string) error {
	return func(o *Options, v string) error {
		if _, err := parse(v); err != nil {
			return err
		}
		*field(o) = v
		return nil
	}
}

func setSwitches(o *Options, v string) error {
	n, wait, err := ParseSwitches(v)
	o.Switches, o.SwitchesWait = n, wait
	return err
}

func setSignal(o *Options, v string) error {
	s, err := ParseSignal(v)
	if err != nil {
		return err
	}
	o.Signal = &s
	return nil
}

// setOpenMode reads --open-mode as sbatch does: by its first letter.
func setOpenMode(o *Options, v string) error {
	switch strings.ToLower(strings.TrimSpace(v) + " ")[0] {
	case 'a':
		o.OpenMode = "append"
	case 't':
		o.OpenMode = "truncate"
	default:
		return fmt.Errorf("%q is neither append nor truncate", v)
	}
	return nil
}

func setNice(o *Options, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fmt.Errorf("--nice %q is not a whole number", v)
	}
	o.Nice = n
	return nil
}

func count(field func(*Options) *int) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive number", v)
		}
		*field(o) = n
		return nil
	}
}

func mem(field func(*Options) *int64) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := ParseMemory(v)
		*field(o) = n
		return err
	}
}

func gpus(field func(*Options) *string) func(*Options, string) error {
	return func(o *Options, v string) error {
		if _, _, err := ParseGPUs(v); err != nil {
			return err
		}
		*field(o) = v
		return nil
	}
}

func setNodes(o *Options, v string) error {
	lo, hi, isRange := strings.Cut(v, "-")
	minN, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil || minN < 1 {
		return fmt.Errorf("invalid node count %q (want min[-max], min >= 1)", v)
	}
	maxN := minN
	if isRange {
		if maxN, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || maxN < minN {
			return fmt.Errorf("invalid node count %q (max below min)", v)
		}
	}
	o.Nodes, o.MaxNodes = minN, maxN
	return nil
}

func setGRES(o *Options, v string) error {
	g, err := ParseGRES(v)
	o.GRES = g
	return err
}

func setTime(o *Options, v string) error {
	d, err := ParseTimeLimit(v)
	o.Time = d
	return err
}

func setDependency(o *Options, v string) error {
	if _, err := ParseDependency(v); err != nil {
		return err
	}
	o.Dependency = v
	return nil
}

func setArray(o *Options, v string) error {
	if _, err := ParseArray(v); err != nil {
		return err
	}
	o.Array = v
	return nil
}

// ParseScript reads a script's #SBATCH directives into Options.
func ParseScript(script string) (*Options, []string, error) {
	args, err := DirectiveArgs(script)
	if err != nil {
		return nil, nil, err
	}
	opts, rest, warnings, err := Parse(args)
	if err != nil {
		return nil, nil, err
	}
	if opts.Set["wrap"] {
		return nil, nil, fmt.Errorf("--wrap is for the command line; a batch script cannot wrap another")
	}
	if len(rest) > 0 {
		// sbatch would take this as the script name; in a directive it
		// is a mistake worth naming.
		return nil, nil, fmt.Errorf("#SBATCH directive has a non-option argument %q", rest[0])
	}
	return opts, warnings, nil
}
