package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/slurmapi/launch"
)

// The task launcher and srun live in slurmapi/launch; these commands are
// how a Slurm job's pod runs them (see slurmapi/kube/pods.go).
func init() {
	register(command{name: "launch", summary: "run a Slurm job's pod: the batch script on node 0, step launches on every node (inside job pods)",
		run: func(args []string) error { return exitWith(launch.Main(args, os.Getenv, os.Stdout, os.Stderr)) }})
	register(command{name: "install-launcher", summary: "copy this binary and an srun link into a directory (a job pod's init container)",
		run: func(args []string) error {
			if len(args) != 1 {
				return usageError{"install-launcher takes one directory"}
			}
			return launch.Install(args[0])
		}})
	register(command{name: "srun", summary: "run a job step (inside a job), or a command in a new allocation (srun --pty bash)",
		run: runSrun, flags: func() *flag.FlagSet { fs, _ := interactiveFlags("srun"); return fs }})
}

// exitWith ends the process with rc: the launcher's and srun's status is
// their tasks', not the CLI's 0/1, and they print their own errors.
func exitWith(rc int) error {
	if rc != 0 {
		os.Exit(rc)
	}
	return nil
}
