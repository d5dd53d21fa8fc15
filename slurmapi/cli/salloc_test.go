package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// TestSallocOptions: salloc's own options (its table, sbatch.Salloc) and
// sbatch's where they mean the same; an option salloc does not have is
// unrecognized, as in salloc.
func TestSallocOptions(t *testing.T) {
	cases := []struct {
		args  string
		err   string
		check func(o *interactiveOptions) bool
	}{
		{args: "--no-shell -p h100 -N 2", check: func(o *interactiveOptions) bool {
			return o.salloc.NoShell && o.alloc.Partition == "h100" && o.alloc.Nodes == 2 && len(o.command) == 0
		}},
		{args: "-K -I5 --bell -Q bash", check: func(o *interactiveOptions) bool {
			return o.salloc.KillCommand == 15 && o.salloc.Immediate == 5*time.Second && o.salloc.Bell == sbatch.BellAlways &&
				o.salloc.Quiet && slices.Equal(o.command, []string{"bash"})
		}},
		{args: "--kill-command=USR1 --no-bell -I bash", check: func(o *interactiveOptions) bool {
			return o.salloc.KillCommand == 10 && o.salloc.Bell == sbatch.BellNever && o.salloc.Immediate == time.Second
		}},
		{args: "-D /work -t 30 --exclusive=user --nice bash", check: func(o *interactiveOptions) bool {
			return o.alloc.Chdir == "/work" && o.alloc.Time == 30*time.Minute && o.alloc.Exclusive && o.alloc.Nice == 100
		}},
		{args: "-Qv -J x bash", check: func(o *interactiveOptions) bool { return o.salloc.Quiet && o.alloc.JobName == "x" }},
		{args: "-o out.txt bash", err: "invalid option -- 'o'"},
		{args: "--wrap=x", err: "unrecognized option '--wrap'"},
		{args: "--x11 bash", err: "X11 forwarding is not available"},
		{args: "-L lic bash", err: "no licenses are configured"},
		{args: "-K BOGUS bash", check: func(o *interactiveOptions) bool {
			return o.salloc.KillCommand == 15 && slices.Equal(o.command, []string{"BOGUS", "bash"}) // -K's value is joined only
		}},
		{args: "-KBOGUS bash", err: "invalid --kill-command specification"},
	}
	for _, c := range cases {
		o, err := parseInteractive("salloc", strings.Fields(c.args))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("salloc %s: err %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("salloc %s: %v", c.args, err)
			continue
		}
		if !c.check(o) {
			t.Errorf("salloc %s: parsed %+v %+v %+v", c.args, o, o.salloc, o.alloc)
		}
	}
}

// TestSrunFromShellPassesSrunOptions: from a user's shell, the options
// only srun has go to the step (in a new allocation too), the others ask
// for the allocation; none is unrecognized.
func TestSrunFromShellPassesSrunOptions(t *testing.T) {
	o, err := parseInteractive("srun", strings.Fields("-u --mpi pmi2 -W 5 -p h100 -l --output=o_%t.txt -n 2 python x.py"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-u", "--mpi", "pmi2", "-W", "5", "-l"}; !slices.Equal(o.srunArgs, want) {
		t.Errorf("srun's own options %q, want %q", o.srunArgs, want)
	}
	if o.alloc.Partition != "h100" || o.alloc.NTasks != 2 || !slices.Equal(o.command, []string{"python", "x.py"}) {
		t.Errorf("allocation %+v command %q", o.alloc, o.command)
	}
	if !slices.Contains(o.stepArgs, "--output=o_%t.txt") || !slices.Contains(o.stepArgs, "--mpi") {
		t.Errorf("step options %q", o.stepArgs)
	}
}
