package main

import (
	"os"

	"github.com/sluicehq/sluice/slurmapi/cli"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// The task launcher and srun live in slurmapi/launch; these commands (and srun, from
// slurmapi/cli, which runs the launcher's srun inside a job's pod) are how a Slurm
// job's pod runs them (see slurmapi/kube/pods.go).
func init() {
	register(command{name: "launch", summary: "run a Slurm job's pod: the batch script on node 0, step launches on every node (inside job pods)",
		run: func(args []string) error { return cli.ExitWith(launch.Main(args, os.Getenv, os.Stdout, os.Stderr)) }})
	register(command{name: "install-launcher", summary: "copy this binary and an srun link into a directory (a job pod's init container)",
		run: func(args []string) error {
			if len(args) != 1 {
				return cli.UsageError{Msg: "install-launcher takes one directory"}
			}
			return launch.Install(args[0])
		}})
}
