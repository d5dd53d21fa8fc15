package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestInteractiveOptions: from a user's shell srun and salloc take
// sbatch's allocation options, --pty and --jobid; the command starts at
// the first word that is not an option; srun's step options are kept
// for the launcher's srun inside an allocation; the allocation carries
// no script or output files.
func TestInteractiveOptions(t *testing.T) {
	o, err := parseInteractive("srun", strings.Fields("--pty -p h100 --gres=gpu:1 -N 2 -t 30 bash -l"))
	if err != nil {
		t.Fatal(err)
	}
	if !o.pty || !slices.Equal(o.command, []string{"bash", "-l"}) || o.alloc.Partition != "h100" || o.alloc.Nodes != 2 {
		t.Errorf("parsed %+v", o)
	}
	job, err := allocationJob(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"script", "standard_output", "standard_error"} {
		if _, ok := job[absent]; ok {
			t.Errorf("allocation carries %s", absent)
		}
	}
	if job["partition"] != "h100" || job["nodes"] != "2" || job["tres_per_node"] != "gres/gpu:1" || job["name"] != "bash" {
		t.Errorf("allocation %v", job)
	}
	o, err = parseInteractive("srun", strings.Fields("--jobid=12 -l -n 4 hostname"))
	if err != nil {
		t.Fatal(err)
	}
	if o.jobID != 12 || !slices.Equal(o.stepArgs, []string{"-l", "-n", "4"}) || !slices.Equal(o.command, []string{"hostname"}) {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range []string{"--jobid=x bash", "--array=1-3 bash", "--no-such-option bash"} {
		o, err := parseInteractive("salloc", strings.Fields(bad))
		if err == nil {
			_, err = allocationJob(o)
		}
		if err == nil {
			t.Errorf("salloc %s: accepted", bad)
		}
	}
}
