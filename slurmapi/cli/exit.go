package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// slurmCommands answer errors as Slurm's commands do (Exit).
var slurmCommands = map[string]bool{
	"sbatch": true, "srun": true, "salloc": true, "squeue": true, "sinfo": true, "scontrol": true, "scancel": true,
	"sacct": true, "sacctmgr": true, "sshare": true, "sreport": true, "sprio": true, "sdiag": true,
}

// IsSlurm reports whether name is one of Slurm's commands, whose errors Exit reports;
// the caller reports the others' (sluice logs) as Sluice's own commands'.
func IsSlurm(name string) bool { return slurmCommands[name] }

// Exit prints err as Slurm's commands do, each line "NAME: error: ...", and
// returns their exit status: 255 for a bad invocation (they exit(SLURM_ERROR) after
// getopt, and scripts test for it) with getopt's wording and "Try ... --help", 1 for
// the rest.
func Exit(stderr io.Writer, name string, err error) int {
	if u, ok := err.(UsageError); ok {
		fmt.Fprintf(stderr, "%s: %s\nTry \"%s --help\" for more information\n", name, getoptWording(u.Msg), name)
		return 255
	}
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		fmt.Fprintf(stderr, "%s: error: %s\n", name, line)
	}
	return 1
}

// getoptWording turns Go's flag errors into getopt's ("invalid option -- 'Z'",
// "unrecognized option '--colour'", "option requires an argument -- 'u'"), which is what
// users of Slurm's commands search for; other messages pass unchanged.
func getoptWording(msg string) string {
	if opt, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		if name := strings.TrimLeft(opt, "-"); len(name) == 1 {
			return fmt.Sprintf("invalid option -- '%s'", name)
		}
		return fmt.Sprintf("unrecognized option '--%s'", strings.TrimLeft(opt, "-"))
	}
	if opt, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		if name := strings.TrimLeft(opt, "-"); len(name) == 1 {
			return fmt.Sprintf("option requires an argument -- '%s'", name)
		}
		return fmt.Sprintf("option '--%s' requires an argument", strings.TrimLeft(opt, "-"))
	}
	return msg
}

// ExitWith ends the process with rc: the launcher's and srun's status is
// their tasks', not the CLI's 0/1, and they print their own errors.
func ExitWith(rc int) error {
	if rc != 0 {
		os.Exit(rc)
	}
	return nil
}
