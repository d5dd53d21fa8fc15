package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(Command{Name: "srun", Summary: "run a job step (inside a job), or a command in a new allocation (srun --pty bash)",
		Run: runSrun, Flags: func() *flag.FlagSet { fs, _ := interactiveFlags("srun"); return fs }})
}

// runSrun is `sluice srun` (also the srun link in a job pod). Inside a
// job's pod it is the launcher's srun. From a user's shell it runs a
// step through the Sluice server: in the allocation named by
// SLURM_JOB_ID (inside `sluice salloc`) or --jobid, else in a new
// allocation made for this command, which ends with it.
func runSrun(args []string) error {
	if os.Getenv(launch.EnvRunDir) != "" {
		return ExitWith(launch.Srun(args, os.Getenv, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
	}
	o, err := parseInteractive("srun", args)
	if err != nil || o.help {
		return err
	}
	if len(o.command) == 0 {
		return UsageError{"no command given (e.g. sluice srun --pty -p h100 --gres=gpu:1 bash)"}
	}
	c, _, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	cancel()
	ctx := context.Background()
	req := launch.AttachRequest{Argv: o.command, Pty: o.pty, Srun: !o.pty}
	if o.jobID == 0 {
		if id := os.Getenv("SLURM_JOB_ID"); id != "" {
			n, err := strconv.ParseUint(id, 10, 32)
			if err != nil {
				return UsageError{fmt.Sprintf("SLURM_JOB_ID=%q is not a job id", id)}
			}
			o.jobID = uint32(n)
		}
	}
	if o.jobID != 0 {
		// A step in an allocation: srun's own options go with the command.
		if !o.pty {
			req.Argv = append(o.stepArgs, o.command...)
		}
		return ExitWith(attachOrFail(ctx, c, o.jobID, req))
	}
	job, err := allocationJob(o)
	if err != nil {
		return err
	}
	a, err := allocateInterruptibly(ctx, c, job, "srun")
	if err != nil {
		return err
	}
	req.EndJob = true
	if !o.pty {
		req.Argv = append(slices.Clone(o.srunArgs), o.command...)
	}
	rc, err := launch.AttachWhenUp(ctx, c, a.ID, req, terminal())
	if err != nil {
		// The allocation was made for this command: it must not outlive it.
		fmt.Fprintf(os.Stderr, "srun: error: %v\n", err)
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		_ = c.Cancel(cctx, a.ID, "")
		return ExitWith(1)
	}
	return ExitWith(rc)
}

func terminal() launch.Terminal {
	return launch.Terminal{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
}

// attachOrFail attaches and returns the command's status, printing a
// failure as srun does.
func attachOrFail(ctx context.Context, c *client.Client, id uint32, req launch.AttachRequest) int {
	rc, err := launch.AttachWhenUp(ctx, c, id, req, terminal())
	if err != nil {
		fmt.Fprintf(os.Stderr, "srun: error: %v\n", err)
		return 1
	}
	return rc
}

// interactiveOptions are srun's and salloc's command line from a user's
// shell: allocation options (sbatch's), --pty, --jobid, and srun's step
// options, which go to the launcher's srun inside an allocation.
type interactiveOptions struct {
	alloc    *sbatch.Options
	salloc   *sbatch.SallocOptions // salloc's own options (salloc only)
	stepArgs []string              // srun step options (-l, -K, ...) for an existing allocation
	srunArgs []string              // the options only srun has, for the step of a new allocation too
	pty      bool
	jobID    uint32
	token    string
	command  []string
	help     bool
}

// stepOnly are srun's options that shape a step, not an allocation.
var stepOnly = map[string]bool{"-l": true, "--label": true, "-K": true, "--kill-on-bad-exit": true}

// interactiveFlags builds srun's or salloc's own options (prog's): those of the
// command, which the shared option tables do not take. Apart from parseInteractive,
// so docs/cli.md and its tests read the very flags the command parses.
func interactiveFlags(prog string) (*flag.FlagSet, *interactiveOptions) {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	o := &interactiveOptions{}
	if prog == "srun" {
		fs.BoolVar(&o.pty, "pty", false, "run COMMAND as one task on the first node, on a terminal (sluice srun --pty bash)")
		fs.Var((*jobIDValue)(&o.jobID), "jobid", "run COMMAND as a step of this job, not in a new allocation")
	} else {
		// Read, as salloc has it, to be refused with a reason (runSalloc).
		fs.Var((*jobIDValue)(&o.jobID), "jobid", "refused: salloc makes a new allocation; --jobid belongs to srun")
	}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	return fs, o
}

// jobIDValue is --jobid: a job id, checked as it is read.
type jobIDValue uint32

func (j *jobIDValue) String() string {
	if *j == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(*j), 10)
}

func (j *jobIDValue) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n == 0 {
		return fmt.Errorf("--jobid %q is not a job id", v)
	}
	*j = jobIDValue(n)
	return nil
}

func parseInteractive(prog string, args []string) (*interactiveOptions, error) {
	fs, o := interactiveFlags(prog)
	var rest []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		n, err := ownFlag(fs, args, i)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			i += n - 1
			continue
		}
		switch {
		case a == "-h" || a == "--help":
			interactiveUsage(os.Stdout, prog)
			o.help = true
			return o, nil
		case stepOnly[a] && prog == "srun":
			o.stepArgs = append(o.stepArgs, a)
			o.srunArgs = append(o.srunArgs, a)
		case prog == "srun" && srunOwn(a):
			// An option of srun's own (-u, --mpi, -W, ...): it shapes the
			// step, in a new allocation too.
			o.stepArgs = append(o.stepArgs, a)
			o.srunArgs = append(o.srunArgs, a)
			if launch.SrunTakesSeparateValue(a) && i+1 < len(args) {
				i++
				o.stepArgs = append(o.stepArgs, args[i])
				o.srunArgs = append(o.srunArgs, args[i])
			}
		case a == "--":
			o.command = args[i+1:]
			i = len(args)
		case !strings.HasPrefix(a, "-") || a == "-":
			o.command = args[i:]
			i = len(args)
		default:
			rest = append(rest, a)
			takes := takesSeparateValue(a)
			if prog == "salloc" {
				takes = sbatch.SallocTakesSeparateValue(a)
			}
			if takes && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
		}
	}
	var opts *sbatch.Options
	var warnings []string
	var err error
	if prog == "salloc" {
		// salloc's own table: its options, sbatch's where they mean the same.
		opts, o.salloc, _, warnings, err = sbatch.ParseSalloc(rest)
	} else {
		opts, _, warnings, err = sbatch.Parse(rest)
	}
	if err != nil {
		return nil, UsageError{err.Error()}
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "%s: warning: %s\n", prog, w)
	}
	o.alloc = opts
	// Inside an allocation the step options the launcher's srun knows
	// (-n, -N, --gpus-per-task, -c, -o, -e, --export) shape the step.
	o.stepArgs = append(o.stepArgs, rest...)
	return o, nil
}

// srunOwn reports whether a (as given: -u, --mpi=pmi2) is an option of
// srun's that sbatch lacks, or one sbatch refuses and srun honours for a
// step (-W, --wait: sbatch's is another option).
func srunOwn(a string) bool {
	if !launch.SrunKnows(a) {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
	is := func(long string, short byte) bool {
		return (strings.HasPrefix(a, "--") && long == name) || (short != 0 && len(a) >= 2 && a[:2] == "-"+string(short))
	}
	for _, o := range slices.Concat(sbatch.Table, sbatch.Ignored) {
		if is(o.Long, o.Short) {
			return false
		}
	}
	for _, r := range sbatch.Refused {
		if is(r.Long, r.Short) {
			return launch.SrunHonours(a)
		}
	}
	return true
}

// takesSeparateValue reports whether sbatch option a takes its value from
// the next argument (-p h100, --time 30).
func takesSeparateValue(a string) bool {
	for _, o := range slices.Concat(sbatch.Table, sbatch.Ignored) {
		if o.Arg != sbatch.RequiredArg {
			continue
		}
		if a == "--"+o.Long || (o.Short != 0 && a == "-"+string(o.Short)) {
			return true
		}
	}
	return false
}

// allocationJob is the job_desc_msg of the allocation o asks for: what
// sbatch would send, without a script or output files.
func allocationJob(o *interactiveOptions) (map[string]any, error) {
	if o.alloc.Set["array"] {
		return nil, UsageError{"an allocation cannot be a job array"}
	}
	job, err := sbatchJob(o.alloc, "", os.Environ(), time.Now())
	if err != nil {
		return nil, UsageError{err.Error()}
	}
	delete(job, "script")
	delete(job, "standard_output")
	delete(job, "standard_error")
	delete(job, "standard_input")
	if !o.alloc.Set["job-name"] {
		job["name"] = "interactive"
		if len(o.command) > 0 {
			job["name"] = o.command[0]
		}
	}
	return job, nil
}

// allocateInterruptibly allocates and waits for the job to run; Ctrl-C,
// SIGTERM or SIGHUP while it waits cancels the allocation, as salloc's does.
func allocateInterruptibly(ctx context.Context, c *client.Client, job map[string]any, prog string) (*launch.Allocation, error) {
	return allocateWith(ctx, c, job, prog, os.Stderr)
}

// allocateWith is allocateInterruptibly saying what happens on log.
func allocateWith(ctx context.Context, c *client.Client, job map[string]any, prog string, log io.Writer) (*launch.Allocation, error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	a, err := launch.Allocate(ctx, c, job, prog, log)
	var refused *client.APIError
	if errors.As(err, &refused) {
		// Slurm's words: srun "Unable to allocate resources: ...", salloc "Job submit/allocate failed: ...".
		if prog == "salloc" {
			return nil, submissionFailedAs("Job submit/allocate failed", err)
		}
		return nil, submissionFailedAs("Unable to allocate resources", err)
	}
	return a, err
}

func interactiveUsage(w io.Writer, prog string) {
	switch prog {
	case "srun":
		fmt.Fprintln(w, "Usage: sluice srun [--pty] [--jobid=N] [OPTIONS...] COMMAND [ARGS...]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "From your shell: allocates a job with sbatch's options (-p, -N, -n, --gres, -t, ...),")
		fmt.Fprintln(w, "runs COMMAND in it through the Sluice server and ends the job with COMMAND's status.")
		fmt.Fprintln(w, "--pty runs COMMAND as one task on the first node, on a terminal (sluice srun --pty bash).")
		fmt.Fprintln(w, "Inside `sluice salloc` (SLURM_JOB_ID set) or with --jobid, runs a step in that job:")
		fmt.Fprintln(w, "srun's step options apply (-n, -N, -l, -K, -c, -w, -m, -W, -u, --mpi, ...: docs/srun.md, Options).")
		fmt.Fprintln(w, "Options only srun has shape the step of a new allocation too.")
	case "salloc":
		fmt.Fprintln(w, "Usage: sluice salloc [OPTIONS...] [COMMAND [ARGS...]]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Allocates a job with sbatch's options, then runs COMMAND (default: your $SHELL) here")
		fmt.Fprintln(w, "with SLURM_JOB_ID and the job's variables set, so `sluice srun` inside runs steps in")
		fmt.Fprintln(w, "the job. The job ends with COMMAND's status when it exits. salloc's own options:")
		fmt.Fprintln(w, "--no-shell, -K/--kill-command[=SIG], -I/--immediate[=SECS], --bell, --no-bell, -Q, -D;")
		fmt.Fprintln(w, "the others are sbatch's (docs/srun.md, Options, lists them all).")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "      --token=TOKEN           auth/jwt token (default $SLURM_JWT)")
	fmt.Fprintln(w, "Allocation options: see `sluice sbatch --help`.")
}
