package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(Command{Name: "sbatch", Summary: "submit a batch script (like Slurm's sbatch)", Run: runSbatch, Flags: flagsOf(sbatchFlags)})
}

// sbatchOpts are the values sbatchFlags binds sbatch's own options to.
type sbatchOpts struct {
	token                    string
	parsable, wait, testOnly bool
}

// sbatchFlags builds sbatch's own options: those of the command, not of the job, which
// the shared option table (and so #SBATCH) does not take. Apart from runSbatch, so
// docs/cli.md and its tests read the very flags the command parses.
func sbatchFlags() (*flag.FlagSet, *sbatchOpts) {
	fs := flag.NewFlagSet("sbatch", flag.ContinueOnError)
	o := &sbatchOpts{}
	fs.BoolVar(&o.parsable, "parsable", false, "print only the job id")
	fs.BoolVar(&o.wait, "W", false, "wait for the job to end; exit with its exit code; also --wait")
	fs.BoolVar(&o.wait, "wait", false, "wait for the job to end")
	fs.BoolVar(&o.testOnly, "test-only", false, "check the job as a submission, store nothing")
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	return fs, o
}

// sbatchArgs peels sbatch's own options (fs's) off args, wherever they are, and
// returns the rest for the shared option table; help: -h or --help was given.
func sbatchArgs(fs *flag.FlagSet, args []string) (rest []string, help bool, err error) {
	for i := 0; i < len(args); i++ {
		if a := args[i]; a == "-h" || a == "--help" {
			return nil, true, nil
		}
		n, err := ownFlag(fs, args, i)
		if err != nil {
			return nil, false, err
		}
		if n == 0 {
			rest = append(rest, args[i])
			continue
		}
		i += n - 1
	}
	return rest, false, nil
}

func runSbatch(args []string) error {
	// sbatch's own flags first; the CLI-only ones are peeled off before
	// the shared option table sees the rest.
	fs, own := sbatchFlags()
	rest, help, err := sbatchArgs(fs, args)
	if err != nil {
		return err
	}
	if help {
		sbatchUsage(os.Stdout)
		return nil
	}
	opts, positional, warnings, err := sbatch.Parse(rest)
	if err != nil {
		return UsageError{err.Error()}
	}
	printed := printWarnings(os.Stderr, warnings, nil)
	script, err := batchScript(opts, positional)
	if err != nil {
		return err
	}
	job, err := sbatchJob(opts, script, os.Environ(), time.Now())
	if err != nil {
		return UsageError{err.Error()}
	}
	if len(positional) > 0 && positional[0] != "-" && !opts.Set["wrap"] {
		// The script's path (scontrol's Command, made absolute as sbatch does) and its
		// arguments; argv[0] is its path, as slurmstepd sets it.
		argv := slices.Clone(positional)
		if abs, err := filepath.Abs(argv[0]); err == nil {
			argv[0] = abs
		}
		job["argv"] = argv
	}
	c, ctx, cancel, err := connect(own.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	if own.testOnly {
		msg, warnings, err := c.TestSubmit(ctx, job)
		if err != nil {
			return submissionFailed("Batch job", err)
		}
		printWarnings(os.Stderr, warnings, printed)
		fmt.Fprintf(os.Stderr, "sbatch: %s\n", msg) // sbatch --test-only writes to stderr
		return nil
	}
	id, err := submitBatch(ctx, c, job, printed, os.Stderr)
	if err != nil {
		return err
	}
	if own.parsable {
		fmt.Println(id)
	} else {
		fmt.Printf("Submitted batch job %d\n", id)
	}
	if own.wait {
		return ExitWith(waitForJob(c, id, os.Stderr))
	}
	return nil
}

// submitBatch submits job and prints the server's warnings (about the
// script's #SBATCH directives) to stderr, except those the command line's
// parse already printed, so an ignored option is reported once.
func submitBatch(ctx context.Context, c *client.Client, job map[string]any, printed []string, stderr io.Writer) (uint32, error) {
	id, warnings, err := c.Submit(ctx, job)
	if err != nil {
		return 0, submissionFailed("Batch job", err)
	}
	printWarnings(stderr, warnings, printed)
	return id, nil
}

// submissionFailed is sbatch's and salloc's line for a refused job, with Slurm's own
// short error ("Batch job submission failed: Invalid partition name specified", what
// users search for), then the server's description of what exactly was wrong on a line
// of its own.
func submissionFailed(what string, err error) error {
	return submissionFailedAs(what+" submission failed", err)
}

// submissionFailedAs is submissionFailed with the command's own lead ("Unable to
// allocate resources" for srun).
func submissionFailedAs(lead string, err error) error {
	var e *client.APIError
	if !errors.As(err, &e) || len(e.Errors) == 0 || e.Errors[0].Error == "" {
		return fmt.Errorf("%s: %w", lead, err)
	}
	first := e.Errors[0]
	if first.Description == "" || first.Description == first.Error {
		return fmt.Errorf("%s: %s", lead, first.Error)
	}
	return fmt.Errorf("%s: %s\n%s", lead, first.Error, oneLine(first.Description))
}

// printWarnings writes each warning as sbatch does ("sbatch: warning: ...")
// unless it is in printed, and returns printed with the new ones added.
func printWarnings(w io.Writer, warnings, printed []string) []string {
	for _, msg := range warnings {
		if slices.Contains(printed, msg) {
			continue
		}
		fmt.Fprintln(w, "sbatch: warning:", msg)
		printed = append(printed, msg)
	}
	return printed
}

// batchScript is the job's script: --wrap's command in sbatch's wrapper,
// or the script file (stdin when none is named).
func batchScript(o *sbatch.Options, positional []string) (string, error) {
	if !o.Set["wrap"] {
		return readScript(positional)
	}
	if len(positional) > 0 {
		return "", UsageError{"script arguments not permitted with --wrap option"}
	}
	return "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n" + o.Wrap + "\n", nil
}

// readScript reads the script named on the command line, or stdin when
// none is named (as sbatch does).
func readScript(positional []string) (string, error) {
	var data []byte
	var err error
	if len(positional) == 0 || positional[0] == "-" {
		data, err = io.ReadAll(io.LimitReader(os.Stdin, 4<<20))
	} else {
		data, err = os.ReadFile(positional[0])
	}
	if err != nil {
		return "", fmt.Errorf("reading the batch script: %w", err)
	}
	if len(data) == 0 {
		return "", errors.New("the batch script is empty")
	}
	return string(data), nil
}

// sbatchJob turns command-line options into REST job fields. Only options
// given on the command line become fields: the server applies the script's
// #SBATCH directives to the rest, so command-line values win, as in sbatch.
// jobFields holds one entry per option that has an effect; a test checks that
// none of sbatch's honoured options is missing from it, so none is dropped.
func sbatchJob(o *sbatch.Options, script string, environ []string, now time.Time) (map[string]any, error) {
	job := map[string]any{"script": script}
	if cwd, err := os.Getwd(); err == nil {
		job["current_working_directory"] = cwd
	}
	for _, name := range slices.Sorted(maps.Keys(jobFields)) {
		if !o.Set[name] {
			continue
		}
		if err := jobFields[name](o, job, now); err != nil {
			return nil, err
		}
	}
	job["environment"] = withSubmitHost(exportedEnv(o.Export, environ))
	return job, nil
}

// jobField writes one command-line option into the job's REST fields.
type jobField func(o *sbatch.Options, job map[string]any, now time.Time) error

// optField is a jobField that sets key to what value reads from the options.
func optField(key string, value func(o *sbatch.Options) any) jobField {
	return func(o *sbatch.Options, job map[string]any, _ time.Time) error {
		job[key] = value(o)
		return nil
	}
}

// jobFields maps each option (by its long name) that has an effect to the REST
// fields it sets. Options read elsewhere: wrap (the script), export (the
// environment, always sent), parsable, wait, test-only and token (the command's own).
var jobFields = map[string]jobField{
	"partition":       optField("partition", func(o *sbatch.Options) any { return o.Partition }),
	"account":         optField("account", func(o *sbatch.Options) any { return o.Account }),
	"qos":             optField("qos", func(o *sbatch.Options) any { return o.QOS }),
	"job-name":        optField("name", func(o *sbatch.Options) any { return o.JobName }),
	"output":          optField("standard_output", func(o *sbatch.Options) any { return o.Output }),
	"error":           optField("standard_error", func(o *sbatch.Options) any { return o.Error }),
	"input":           optField("standard_input", func(o *sbatch.Options) any { return o.Input }),
	"chdir":           optField("current_working_directory", func(o *sbatch.Options) any { return o.Chdir }),
	"dependency":      optField("dependency", func(o *sbatch.Options) any { return o.Dependency }),
	"array":           optField("array", func(o *sbatch.Options) any { return o.Array }),
	"comment":         optField("comment", func(o *sbatch.Options) any { return o.Comment }),
	"reservation":     optField("reservation", func(o *sbatch.Options) any { return o.Reservation }),
	"ntasks":          optField("tasks", func(o *sbatch.Options) any { return o.NTasks }),
	"ntasks-per-node": optField("tasks_per_node", func(o *sbatch.Options) any { return o.NTasksPerNode }),
	"cpus-per-task":   optField("cpus_per_task", func(o *sbatch.Options) any { return o.CPUsPerTask }),
	"mem":             optField("memory_per_node", func(o *sbatch.Options) any { return client.Set(o.Mem) }),
	"mem-per-cpu":     optField("memory_per_cpu", func(o *sbatch.Options) any { return client.Set(o.MemPerCPU) }),
	"mem-per-gpu":     optField("memory_per_tres", func(o *sbatch.Options) any { return fmt.Sprintf("gres/gpu=%d", o.MemPerGPU) }),
	"priority":        optField("priority", func(o *sbatch.Options) any { return client.Set(o.Priority) }),
	"time":            optField("time_limit", func(o *sbatch.Options) any { return client.Set(int64(o.Time / time.Minute)) }),
	"requeue":         optField("requeue", func(o *sbatch.Options) any { return o.Requeue }),
	"no-requeue":      optField("requeue", func(o *sbatch.Options) any { return o.Requeue }),
	"hold":            optField("hold", func(o *sbatch.Options) any { return o.Hold }),
	"nice":            optField("nice", func(o *sbatch.Options) any { return o.Nice }),
	"gpus":            optField("tres_per_job", func(o *sbatch.Options) any { return "gres/gpu:" + o.GPUs }),
	"gpus-per-node":   optField("tres_per_node", func(o *sbatch.Options) any { return "gres/gpu:" + o.GPUsPerNode }),
	"gpus-per-task":   optField("tres_per_task", func(o *sbatch.Options) any { return "gres/gpu:" + o.GPUsPerTask }),
	"container-image": optField("container_image", func(o *sbatch.Options) any { return o.ContainerImage }),
	"open-mode":       optField("open_mode", func(o *sbatch.Options) any { return []string{strings.ToUpper(o.OpenMode)} }),
	"exclusive":       optField("shared", func(o *sbatch.Options) any { return []string{"none"} }),
	"constraint":      optField("constraints", func(o *sbatch.Options) any { return o.Constraint }),
	"nodelist":        optField("required_nodes", func(o *sbatch.Options) any { return o.NodeList }),
	"exclude":         optField("excluded_nodes", func(o *sbatch.Options) any { return o.Exclude }),
	"spread-job":      optField("flags", func(o *sbatch.Options) any { return []string{"SPREAD_JOB"} }),
	"nodes": optField("nodes", func(o *sbatch.Options) any {
		if o.MaxNodes > o.Nodes {
			return fmt.Sprintf("%d-%d", o.Nodes, o.MaxNodes)
		}
		return fmt.Sprint(o.Nodes)
	}),
	"gres": optField("tres_per_node", func(o *sbatch.Options) any {
		parts := make([]string, 0, len(o.GRES))
		for _, g := range o.GRES {
			s := "gres/" + g.Name
			if g.Type != "" {
				s += ":" + g.Type
			}
			parts = append(parts, fmt.Sprintf("%s:%d", s, g.Count))
		}
		return strings.Join(parts, ",")
	}),
	"switches": func(o *sbatch.Options, job map[string]any, _ time.Time) error {
		job["required_switches"] = client.Set(int64(o.Switches))
		if o.SwitchesWait > 0 {
			job["wait_for_switch"] = client.Set(int64(o.SwitchesWait / time.Second))
		}
		return nil
	},
	"signal": func(o *sbatch.Options, job map[string]any, _ time.Time) error {
		s := o.Signal
		job["kill_warning_signal"] = strconv.Itoa(s.Num)
		job["kill_warning_delay"] = client.Set(int64(s.Before))
		var flags []string
		if s.Batch {
			flags = append(flags, "BATCH_JOB")
		}
		if s.Reservation {
			flags = append(flags, "RESERVATION_JOB")
		}
		if flags != nil {
			job["kill_warning_flags"] = flags
		}
		return nil
	},
	"begin": func(o *sbatch.Options, job map[string]any, now time.Time) error {
		t, err := sbatch.ParseBegin(o.Begin, now)
		if err != nil {
			return fmt.Errorf("--begin: %w", err)
		}
		job["begin_time"] = client.Set(t.Unix())
		return nil
	},
}

// exportedEnv is the environment sent with the job: the command line's
// --export applied (the server applies a script's #SBATCH --export when
// the command line gives none), never empty, as a job needs a PATH.
func exportedEnv(export string, environ []string) []string {
	env := sbatch.ExportEnv(export, environ)
	if len(env) == 0 || (len(env) == 1 && sbatch.HasExportEnv(env)) {
		env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, env...)
	}
	return env
}

// withSubmitHost adds SLURM_SUBMIT_HOST, the host sbatch runs on, which Slurm
// exports to the job whatever --export says (the server takes it from there;
// without it the job sees the client's address).
func withSubmitHost(env []string) []string {
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SLURM_SUBMIT_HOST=") }) {
		return env
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		env = append(env, "SLURM_SUBMIT_HOST="+h)
	}
	return env
}

func sbatchUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sluice sbatch [OPTIONS...] script [args...]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Submits a batch script. #SBATCH directives in the script apply where the command")
	fmt.Fprintln(w, "line does not set the option. Prints 'Submitted batch job N'.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "      --parsable              print only the job id")
	fmt.Fprintln(w, "  -W, --wait                  wait for the job to end; exit with its exit code")
	fmt.Fprintln(w, "      --test-only             check the job as a submission, store nothing")
	fmt.Fprintln(w, "      --token=TOKEN           auth/jwt token (default $SLURM_JWT)")
	for _, o := range slices.Concat(sbatch.Table, sbatch.Ignored) {
		short := "   "
		if o.Short != 0 {
			short = "-" + string(o.Short) + ","
		}
		name := "--" + o.Long
		if o.Arg == sbatch.RequiredArg {
			name += "=VALUE"
		}
		fmt.Fprintf(w, "  %s %-22s %s\n", short, name, o.Help)
	}
}
