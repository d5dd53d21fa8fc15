package sbatch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// salloc's options. salloc shares most of its options with sbatch and
// means the same by them; Salloc lists every option of Slurm's salloc
// (testdata/salloc-options.txt of slurmapi/launch holds Slurm's list),
// each either with a rule of its own (an option sbatch lacks, or one salloc
// takes differently) or "as sbatch", which then follows sbatch's table
// (Table, Ignored, Refused). ParseSalloc reads salloc's command line with
// it and nothing else: an option salloc does not have is unrecognized, as
// in salloc.

// OptionalArg is an option whose value is optional: given only joined to
// it (--kill-command=TERM, -KTERM), as getopt takes optional values.
const OptionalArg ArgKind = RequiredArg + 1

// Rule is what Sluice does with an option: honours it, accepts it with
// a warning, or refuses it.
type Rule int

const (
	RuleHonoured Rule = iota
	RuleWarned
	RuleRefused
)

func (r Rule) String() string {
	return [...]string{"honoured", "accepted with a warning", "refused"}[r]
}

// SallocOptions are what salloc's own options ask for.
type SallocOptions struct {
	NoShell bool // --no-shell: allocate and exit, leaving the job running
	// Bell: ring the terminal bell when the allocation is granted:
	// BellAfterDelay (default: when the wait was long), BellAlways, BellNever.
	Bell BellMode
	// KillCommand is the signal for the command when the allocation is
	// revoked (-K); 0: it is not signalled.
	KillCommand int
	// Immediate is how long to wait for the allocation (-I); 0: as long
	// as it takes.
	Immediate time.Duration
	Quiet     bool // -Q: no informational messages
	Usage     bool // --usage
	Version   bool // -V
	Help      bool // -h
}

// BellMode is when salloc rings the terminal bell.
type BellMode int

const (
	BellAfterDelay BellMode = iota
	BellAlways
	BellNever
)

// BellDelay is how long an allocation must take for the default bell
// (salloc's "bell-after-delay": ten seconds).
const BellDelay = 10 * time.Second

// SallocOption is one row of salloc's table.
type SallocOption struct {
	Long  string
	Short byte
	Arg   ArgKind
	// AsSbatch: the option is sbatch's and follows sbatch's row; the
	// fields below are then unused.
	AsSbatch bool
	Rule     Rule
	Help     string
	apply    func(o *Options, s *SallocOptions, v string, given bool) error
}

func asSbatch(names ...string) []SallocOption {
	out := make([]SallocOption, len(names))
	for i, n := range names {
		out[i] = SallocOption{Long: n, AsSbatch: true}
	}
	return out
}

// Salloc is every salloc option: Slurm 22.05's (man salloc, salloc
// --help) and what newer releases added.
var Salloc = append(asSbatch(
	"account", "acctg-freq", "bb", "bbf", "begin", "chdir", "cluster-constraint", "clusters", "comment",
	"constraint", "container", "contiguous", "core-spec", "cores-per-socket", "cpu-freq", "cpus-per-gpu",
	"cpus-per-task", "deadline", "delay-boot", "dependency", "distribution", "exclude", "extra-node-info",
	"gid", "gpu-bind", "gpu-freq", "gpus", "gpus-per-node", "gpus-per-task", "gres", "gres-flags", "hint",
	"hold", "job-name", "licenses", "mail-type", "mail-user", "mcs-label", "mem", "mem-bind", "mem-per-cpu",
	"mem-per-gpu", "mincpus", "network", "nodefile", "nodelist", "nodes", "ntasks", "ntasks-per-core",
	"ntasks-per-gpu", "ntasks-per-node", "ntasks-per-socket", "overcommit", "oversubscribe", "partition",
	"power", "prefer", "priority", "profile", "qos", "reboot", "reservation", "signal", "sockets-per-node",
	"spread-job", "switches", "thread-spec", "threads-per-core", "time", "time-min", "tmp", "uid",
	"use-min-nodes", "verbose", "wait-all-nodes", "wckey",
	// newer Slurm
	"container-id", "extra", "segment", "tres-bind", "tres-per-task",
	// pyxis (a SPANK plugin): the job's image
	"container-image"),
	SallocOption{Long: "bell", Rule: RuleHonoured, Help: "ring the terminal bell when the allocation is granted", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.Bell = BellAlways
		return nil
	}},
	SallocOption{Long: "no-bell", Rule: RuleHonoured, Help: "never ring the bell (default: when the allocation took more than 10 s and stderr is a terminal)", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.Bell = BellNever
		return nil
	}},
	SallocOption{Long: "no-shell", Rule: RuleHonoured, Help: "exit once the allocation is granted, leaving it running (sluice srun --jobid=N runs steps in it; scancel N ends it)", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.NoShell = true
		return nil
	}},
	SallocOption{Long: "kill-command", Short: 'K', Arg: OptionalArg, Rule: RuleHonoured, Help: "signal the command (default SIGTERM) when the allocation is revoked (scancel, time limit)", apply: setKillCommand},
	SallocOption{Long: "immediate", Short: 'I', Arg: OptionalArg, Rule: RuleHonoured, Help: "give up (and cancel the job) when the allocation is not granted within SECS seconds (default 1)", apply: setImmediate},
	SallocOption{Long: "quiet", Short: 'Q', Rule: RuleHonoured, Help: "no informational messages (Granted job allocation, ...); errors still", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.Quiet = true
		return nil
	}},
	SallocOption{Long: "help", Short: 'h', Rule: RuleHonoured, Help: "print the usage and exit", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.Help = true
		return nil
	}},
	SallocOption{Long: "usage", Rule: RuleHonoured, Help: "print a short usage and exit", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.Usage = true
		return nil
	}},
	SallocOption{Long: "version", Short: 'V', Rule: RuleHonoured, Help: "print the Slurm release Sluice's salloc follows and exit", apply: func(_ *Options, s *SallocOptions, _ string, _ bool) error {
		s.Version = true
		return nil
	}},
	SallocOption{Long: "exclusive", Arg: OptionalArg, Rule: RuleHonoured, Help: "whole nodes, as sbatch --exclusive; =user and =mcs are taken as plain --exclusive", apply: func(o *Options, _ *SallocOptions, v string, given bool) error {
		if given && v != "user" && v != "mcs" {
			return fmt.Errorf("invalid --exclusive specification %q (user or mcs)", v)
		}
		o.Exclusive = true
		o.Set["exclusive"] = true
		return nil
	}},
	SallocOption{Long: "nice", Arg: OptionalArg, Rule: RuleHonoured, Help: "lower the job's priority by ADJUSTMENT (default 100; below 0: operators only)", apply: func(o *Options, _ *SallocOptions, v string, given bool) error {
		if !given {
			v = "100"
		}
		if err := setNice(o, v); err != nil {
			return err
		}
		o.Set["nice"] = true
		return nil
	}},
	SallocOption{Long: "no-kill", Short: 'k', Arg: OptionalArg, Rule: RuleWarned, Help: "a job that loses a node is requeued or ends NODE_FAIL"},
	SallocOption{Long: "get-user-env", Arg: OptionalArg, Rule: RuleWarned, Help: "the command runs with your own environment, and the job gets it as sbatch sends it"},
	SallocOption{Long: "gpus-per-socket", Rule: RuleWarned, Arg: RequiredArg, Help: "node geometry is not requested; ask for GPUs with --gpus-per-node"},
	SallocOption{Long: "x11", Arg: OptionalArg, Rule: RuleRefused, Help: "X11 forwarding is not available"},
	SallocOption{Long: "oom-kill-step", Arg: OptionalArg, Rule: RuleWarned, Help: "the kubelet's OOM handling applies"},
	SallocOption{Long: "stepmgr", Rule: RuleWarned, Help: "steps are managed on the job's first node already (its launcher hands out step ids)"},
)

func setKillCommand(_ *Options, s *SallocOptions, v string, given bool) error {
	s.KillCommand = 15 // SIGTERM
	if given {
		n, err := SignalNumber(v)
		if err != nil {
			return fmt.Errorf("invalid --kill-command specification: %v", err)
		}
		s.KillCommand = n
	}
	return nil
}

func setImmediate(_ *Options, s *SallocOptions, v string, given bool) error {
	s.Immediate = time.Second
	if given {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return fmt.Errorf("invalid --immediate value %q (seconds)", v)
		}
		s.Immediate = max(time.Duration(n)*time.Second, time.Second)
	}
	return nil
}

// SallocRule is what Sluice's salloc does with option long (its long
// name): its rule, value kind, short letter and note; ok false when
// salloc has no such option.
func SallocRule(long string) (rule Rule, arg ArgKind, short byte, note string, ok bool) {
	for _, r := range Salloc {
		if r.Long != long {
			continue
		}
		if !r.AsSbatch {
			return r.Rule, r.Arg, r.Short, r.Help, true
		}
		return sbatchRule(long)
	}
	return 0, 0, 0, "", false
}

// sbatchRule is sbatch's rule for one of its options.
func sbatchRule(long string) (Rule, ArgKind, byte, string, bool) {
	for _, list := range [][]Option{Table, Ignored} {
		for _, o := range list {
			if o.Long == long {
				if o.apply == nil {
					return RuleWarned, o.Arg, o.Short, o.Help, true
				}
				return RuleHonoured, o.Arg, o.Short, o.Help, true
			}
		}
	}
	for _, r := range Refused {
		if r.Long == long {
			return RuleRefused, RequiredArg, r.Short, r.Why, true
		}
	}
	return 0, 0, 0, "", false
}

// sallocHit is the row a salloc option name finds.
type sallocHit struct {
	own *SallocOption  // salloc's own row
	opt *Option        // sbatch's row
	ref *RefusedOption // sbatch's refusal
	row *SallocOption  // the Salloc entry (own or AsSbatch)
}

func (h sallocHit) name() string { return h.row.Long }

// sallocArg is how the option h found takes its value.
func sallocArg(h sallocHit) ArgKind {
	switch {
	case h.opt != nil:
		return h.opt.Arg
	case h.own != nil:
		return h.own.Arg
	}
	return RequiredArg
}

// SallocTakesSeparateValue reports whether salloc option arg (as given,
// "-p" or "--time") takes its value from the next argument.
func SallocTakesSeparateValue(arg string) bool {
	var h sallocHit
	var err error
	switch {
	case strings.HasPrefix(arg, "--"):
		if strings.Contains(arg, "=") {
			return false
		}
		h, err = lookupSalloc(arg[2:])
	case len(arg) == 2 && arg[0] == '-':
		h, err = lookupSallocShort(arg[1])
	default:
		return false
	}
	return err == nil && h.ref == nil && sallocArg(h) == RequiredArg
}

// resolve finds the rule behind a Salloc entry.
func resolve(r *SallocOption) sallocHit {
	h := sallocHit{row: r}
	if !r.AsSbatch {
		h.own = r
		return h
	}
	for _, list := range [][]Option{Table, Ignored} {
		for i := range list {
			if list[i].Long == r.Long {
				h.opt = &list[i]
				return h
			}
		}
	}
	for i := range Refused {
		if Refused[i].Long == r.Long {
			h.ref = &Refused[i]
		}
	}
	return h
}

// lookupSalloc finds a long option by name or unambiguous prefix, as
// getopt_long does over salloc's table.
func lookupSalloc(name string) (sallocHit, error) {
	var prefix []sallocHit
	for i := range Salloc {
		r := &Salloc[i]
		if r.Long == name {
			return resolve(r), nil
		}
		if name != "" && strings.HasPrefix(r.Long, name) {
			prefix = append(prefix, resolve(r))
		}
	}
	switch len(prefix) {
	case 0:
		return sallocHit{}, fmt.Errorf("unrecognized option '--%s'", name)
	case 1:
		return prefix[0], nil
	}
	return sallocHit{}, fmt.Errorf("option '--%s' is ambiguous (--%s, --%s, ...)", name, prefix[0].name(), prefix[1].name())
}

func lookupSallocShort(c byte) (sallocHit, error) {
	for i := range Salloc {
		r := &Salloc[i]
		h := resolve(r)
		short := r.Short
		switch {
		case h.opt != nil:
			short = h.opt.Short
		case h.ref != nil:
			short = h.ref.Short
		}
		if short == c && c != 0 {
			return h, nil
		}
	}
	return sallocHit{}, fmt.Errorf("invalid option -- '%c'", c)
}

// ParseSalloc reads salloc's options up to its command (the first word
// that is not an option) into sbatch's Options (the allocation) and
// salloc's own. Warnings name the options accepted without effect.
func ParseSalloc(args []string) (opts *Options, salloc *SallocOptions, rest []string, warnings []string, err error) {
	opts, salloc = &Options{Set: map[string]bool{}}, &SallocOptions{}
	args = append([]string(nil), args...) // bundled short options are split in place
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return opts, salloc, args[i+1:], warnings, nil
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			return opts, salloc, args[i:], warnings, nil
		}
		var (
			h        sallocHit
			value    string
			hasValue bool
			flag     string
		)
		if long, ok := strings.CutPrefix(arg, "--"); ok {
			name, v, eq := strings.Cut(long, "=")
			if h, err = lookupSalloc(name); err != nil {
				return nil, nil, nil, nil, err
			}
			value, hasValue, flag = v, eq, "--"+h.name()
		} else {
			if h, err = lookupSallocShort(arg[1]); err != nil {
				return nil, nil, nil, nil, err
			}
			flag = "--" + h.name()
			if len(arg) > 2 {
				if sallocArg(h) == NoArg {
					// -Qv: the rest is more options.
					args = append(append(args[:i+1:i+1], "-"+arg[2:]), args[i+1:]...)
				} else {
					value, hasValue = arg[2:], true
				}
			}
		}
		if h.ref != nil {
			return nil, nil, nil, nil, h.ref.err()
		}
		kind := sallocArg(h)
		switch {
		case kind == RequiredArg && !hasValue:
			if i+1 >= len(args) {
				return nil, nil, nil, nil, fmt.Errorf("option %s requires a value", flag)
			}
			i++
			value, hasValue = args[i], true
		case kind == NoArg && hasValue:
			return nil, nil, nil, nil, fmt.Errorf("option %s takes no value", flag)
		}
		if h.opt != nil {
			if h.opt.apply == nil {
				warnings = append(warnings, fmt.Sprintf("%s is accepted but has no effect in Sluice (%s)", flag, h.opt.Help))
				continue
			}
			if err := h.opt.apply(opts, value); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("%s: %w", flag, err)
			}
			opts.Set[h.opt.Long] = true
			continue
		}
		switch {
		case h.own.apply != nil:
			if err := h.own.apply(opts, salloc, value, hasValue); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("%s: %w", flag, err)
			}
		case h.own.Rule == RuleRefused:
			return nil, nil, nil, nil, fmt.Errorf("%s is not supported in Sluice: %s", flag, h.own.Help)
		default:
			warnings = append(warnings, fmt.Sprintf("%s is accepted but has no effect in Sluice (%s)", flag, h.own.Help))
		}
	}
	return opts, salloc, nil, warnings, nil
}
