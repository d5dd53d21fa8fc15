package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(command{name: "sbatch", summary: "submit a batch script (like Slurm's sbatch)", run: runSbatch})
}

func runSbatch(args []string) error {
	// sbatch's own flags first; the CLI-only ones are peeled off before
	// the shared option table sees the rest.
	var token string
	parsable := false
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-h" || a == "--help":
			sbatchUsage(os.Stdout)
			return nil
		case a == "--parsable":
			parsable = true
		case a == "--token" && i+1 < len(args):
			token = args[i+1]
			i++
		case strings.HasPrefix(a, "--token="):
			token = strings.TrimPrefix(a, "--token=")
		default:
			rest = append(rest, a)
		}
	}
	opts, positional, warnings, err := sbatch.Parse(rest)
	if err != nil {
		return usageError{err.Error()}
	}
	printed := printWarnings(os.Stderr, warnings, nil)
	script, err := batchScript(opts, positional)
	if err != nil {
		return err
	}
	job, err := sbatchJob(opts, script, os.Environ(), time.Now())
	if err != nil {
		return usageError{err.Error()}
	}
	if len(positional) > 1 {
		// The script's arguments; argv[0] is its path, as slurmstepd
		// sets it.
		job["argv"] = positional
	}
	c, ctx, cancel, err := connect(token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	id, err := submitBatch(ctx, c, job, printed, os.Stderr)
	if err != nil {
		return err
	}
	if parsable {
		fmt.Println(id)
	} else {
		fmt.Printf("Submitted batch job %d\n", id)
	}
	return nil
}

// submitBatch submits job and prints the server's warnings (about the
// script's #SBATCH directives) to stderr, except those the command line's
// parse already printed, so an ignored option is reported once.
func submitBatch(ctx context.Context, c *client.Client, job map[string]any, printed []string, stderr io.Writer) (uint32, error) {
	id, warnings, err := c.Submit(ctx, job)
	if err != nil {
		return 0, fmt.Errorf("Batch job submission failed: %w", err)
	}
	printWarnings(stderr, warnings, printed)
	return id, nil
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
		return "", usageError{"script arguments not permitted with --wrap option"}
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
func sbatchJob(o *sbatch.Options, script string, environ []string, now time.Time) (map[string]any, error) {
	job := map[string]any{"script": script}
	set := func(opt, key string, v any) {
		if o.Set[opt] {
			job[key] = v
		}
	}
	set("partition", "partition", o.Partition)
	set("account", "account", o.Account)
	set("qos", "qos", o.QOS)
	set("job-name", "name", o.JobName)
	set("output", "standard_output", o.Output)
	set("error", "standard_error", o.Error)
	set("input", "standard_input", o.Input)
	set("dependency", "dependency", o.Dependency)
	set("array", "array", o.Array)
	set("comment", "comment", o.Comment)
	set("ntasks", "tasks", o.NTasks)
	set("ntasks-per-node", "tasks_per_node", o.NTasksPerNode)
	set("cpus-per-task", "cpus_per_task", o.CPUsPerTask)
	set("mem", "memory_per_node", client.Set(o.Mem))
	set("mem-per-cpu", "memory_per_cpu", client.Set(o.MemPerCPU))
	set("mem-per-gpu", "memory_per_tres", fmt.Sprintf("gres/gpu=%d", o.MemPerGPU))
	set("priority", "priority", client.Set(o.Priority))
	set("time", "time_limit", client.Set(int64(o.Time/time.Minute)))
	set("requeue", "requeue", o.Requeue)
	set("no-requeue", "requeue", o.Requeue)
	set("hold", "hold", o.Hold)
	set("nice", "nice", o.Nice)
	set("gpus", "tres_per_job", "gres/gpu:"+o.GPUs)
	set("gpus-per-node", "tres_per_node", "gres/gpu:"+o.GPUsPerNode)
	set("gpus-per-task", "tres_per_task", "gres/gpu:"+o.GPUsPerTask)
	set("container-image", "container_image", o.ContainerImage)
	set("open-mode", "open_mode", []string{strings.ToUpper(o.OpenMode)})
	if o.Set["nodes"] {
		nodes := fmt.Sprint(o.Nodes)
		if o.MaxNodes > o.Nodes {
			nodes = fmt.Sprintf("%d-%d", o.Nodes, o.MaxNodes)
		}
		job["nodes"] = nodes
	}
	if o.Set["gres"] {
		var parts []string
		for _, g := range o.GRES {
			s := "gres/" + g.Name
			if g.Type != "" {
				s += ":" + g.Type
			}
			parts = append(parts, fmt.Sprintf("%s:%d", s, g.Count))
		}
		job["tres_per_node"] = strings.Join(parts, ",")
	}
	if o.Set["begin"] {
		t, err := sbatch.ParseBegin(o.Begin, now)
		if err != nil {
			return nil, fmt.Errorf("--begin: %w", err)
		}
		job["begin_time"] = client.Set(t.Unix())
	}
	cwd, err := os.Getwd()
	if err == nil {
		job["current_working_directory"] = cwd
	}
	if o.Set["chdir"] {
		job["current_working_directory"] = o.Chdir
	}
	job["environment"] = withSubmitHost(exportedEnv(o.Export, environ))
	return job, nil
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
