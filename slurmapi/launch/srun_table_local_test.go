package launch_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSrunOptionsInAJob runs srun's options in a job of two nodes (4 CPUs
// each, one task per node) as real launcher processes: what the script
// prints (sorted), srun's stderr lines that must be there, and the
// batch script's status (srun's, as the script's last command).
func TestSrunOptionsInAJob(t *testing.T) {
	const where = `sh -c 'echo $SLURM_PROCID $SLURM_NODEID'`
	cases := []struct {
		name   string
		script string // after #!/bin/sh; $H0 and $H1 are the nodes' names, HOST0 and HOST1 in out and stderr
		files  map[string]string
		out    []string
		stderr []string
		rc     int
	}{
		{name: "nodelist runs the step on the named host",
			script: "srun -w $H1 -n2 " + where, out: []string{"0 0", "1 0"}},
		{name: "nodelist outside the allocation is refused",
			script: "srun -w elsewhere-3 true", rc: 1,
			stderr: []string{"srun: error: Unable to create step for job 42: Requested node configuration is not available"}},
		{name: "exclude leaves a host out",
			script: "srun -x $H0 -n2 " + where, out: []string{"0 0", "1 0"}},
		{name: "relative starts at a node",
			script: "srun -r 1 -n 1 sh -c 'echo $SLURMD_NODENAME'", out: []string{"HOST1"}},
		{name: "cyclic distribution deals task ids round the nodes",
			script: "srun -n4 -m cyclic -l sh -c 'echo $SLURMD_NODENAME $SLURM_DISTRIBUTION'", out: []string{"0: HOST0 cyclic", "1: HOST1 cyclic", "2: HOST0 cyclic", "3: HOST1 cyclic"}},
		{name: "block distribution keeps them together",
			script: "srun -n4 --distribution=block -l sh -c 'echo $SLURMD_NODENAME'", out: []string{"0: HOST0", "1: HOST0", "2: HOST1", "3: HOST1"}},
		{name: "more tasks than the job's CPUs are refused as Slurm refuses them",
			script: "srun -n9 true", rc: 1,
			stderr: []string{"srun: error: Unable to create step for job 42: More processors requested than permitted"}},
		{name: "overcommit allows them",
			script: "srun -O -n9 true; echo $?", out: []string{"0"}},
		{name: "wait ends the others after the first task's end",
			script: "srun -W 1 sh -c 'trap \"echo term $SLURM_PROCID; exit 0\" TERM; [ $SLURM_PROCID = 1 ] && exit 0; while :; do sleep 0.1; done'",
			out:    []string{"term 0"}, stderr: []string{"srun: First task exited 1s ago"}},
		{name: "input none gives task 0 nothing",
			script: "echo secret | srun -n2 -i none -l sh -c 'cat; echo end'", out: []string{"0: end", "1: end"}},
		{name: "input file",
			script: "srun -n1 -i in-%j.txt sh -c 'cat'", files: map[string]string{"in-42.txt": "from file\n"}, out: []string{"from file"}},
		{name: "chdir",
			script: "mkdir -p sub; srun -n1 -D sub sh -c 'basename $PWD'", out: []string{"sub"}},
		{name: "open-mode append keeps what srun's output file had",
			script: "srun -n1 --open-mode=append -o log.txt echo two; cat log.txt",
			files:  map[string]string{"log.txt": "one\n"}, out: []string{"one", "two"}},
		{name: "submitit's options run without a word",
			script: "srun --unbuffered --output %j_%t_log.out --error %j_%t_log.err sh -c 'echo hi'; cat 42_0_log.out 42_1_log.out",
			out:    []string{"hi", "hi"}},
		{name: "a warned option says what Sluice does instead",
			script: "srun -n1 --cpu-bind=cores true",
			stderr: []string{"srun: warning: --cpu-bind=cores: Sluice does not bind tasks to CPUs; the container's cgroup limits them"}},
		{name: "an option Slurm does not have is unrecognized",
			script: "srun --bogus true", rc: 1,
			stderr: []string{"srun: unrecognized option '--bogus'", `Try "srun --help" for more information`}},
		{name: "prolog and epilog run around the step",
			script: "srun -n1 --prolog=./pro.sh --epilog=./epi.sh echo step",
			files:  map[string]string{"pro.sh": "#!/bin/sh\necho prolog $*\n", "epi.sh": "#!/bin/sh\necho epilog $*\n"},
			out:    []string{"epilog echo step", "prolog echo step", "step"}},
		{name: "verbose says where the tasks are launched",
			script: "srun -v -n3 true",
			stderr: []string{"srun: launching StepId=42.0 on host HOST0, 2 tasks: [0-1]", "srun: launching StepId=42.0 on host HOST1, 1 tasks: 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			nodes := startJob(t, 2, 0, "#!/bin/sh\nH0=${SLUICE_LAUNCH_HOSTS%%,*} H1=${SLUICE_LAUNCH_HOSTS##*,}\n"+c.script+"\n", dir)
			host := hostsOf(nodes)
			subst := strings.NewReplacer("HOST0", host[0], "HOST1", host[1])
			if rc := finish(t, nodes); rc != c.rc {
				t.Fatalf("batch host exited %d, want %d: %q", rc, c.rc, nodes[0].Stderr().All())
			}
			got := nodes[0].Stdout().All()
			slices.Sort(got)
			want := make([]string, len(c.out))
			for i, l := range c.out {
				want[i] = subst.Replace(l)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("output %q, want %q (stderr %q)", got, want, nodes[0].Stderr().All())
			}
			errs := nodes[0].Stderr().All()
			for _, w := range c.stderr {
				if !slices.Contains(errs, subst.Replace(w)) {
					t.Errorf("stderr %q lacks %q", errs, subst.Replace(w))
				}
			}
		})
	}
}
