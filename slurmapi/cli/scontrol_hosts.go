package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// scontrolHosts answers `scontrol show hostnames|hostlist|hostlistsorted [LIST]` as
// scontrol does, without the server: hostnames expands a node list one name per line
// (the MASTER_ADDR recipe: `scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1`),
// hostlist and hostlistsorted compress names (a list, or one per line) into a Slurm
// node list, sorted either way. LIST defaults to $SLURM_JOB_NODELIST, as in scontrol. ok is
// false when what is not one of these.
func scontrolHosts(w io.Writer, what, list string) (ok bool, err error) {
	switch what {
	case "hostnames", "hostname":
	case "hostlist", "hostlistsorted":
	default:
		return false, nil
	}
	if list == "" {
		list = os.Getenv("SLURM_JOB_NODELIST")
	}
	if strings.TrimSpace(list) == "" {
		return true, fmt.Errorf("show %s: no host list given and SLURM_JOB_NODELIST is not set", what)
	}
	// scontrol takes names separated by commas or by white space (the output of
	// `show hostnames` piped back in).
	names, err := sbatch.ParseNodeList(strings.Join(strings.Fields(list), ","))
	if err != nil {
		return true, fmt.Errorf("show %s: %v", what, err)
	}
	if what == "hostnames" || what == "hostname" {
		for _, n := range names {
			fmt.Fprintln(w, n)
		}
		return true, nil
	}
	fmt.Fprintln(w, sbatch.HostList(names))
	return true, nil
}
