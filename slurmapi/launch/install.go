package launch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Install copies the running binary into dir as "sluice" and links the
// job's Slurm commands (jobCommands) to it: the init container runs it
// from the sluice image, so the job's own image needs nothing of Sluice.
// The PMIx server (PMIxHelper), where it lies beside the binary as in the
// sluice image, is copied with it.
func Install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the sluice binary: %w", err)
	}
	if err := installFile(self, filepath.Join(dir, "sluice")); err != nil {
		return err
	}
	helper := filepath.Join(filepath.Dir(self), PMIxHelper)
	if _, err := os.Stat(helper); err == nil {
		if err := installFile(helper, filepath.Join(dir, PMIxHelper)); err != nil {
			return err
		}
	}
	for _, name := range jobCommands {
		link := filepath.Join(dir, name)
		_ = os.Remove(link)
		if err := os.Symlink("sluice", link); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
	}
	return nil
}

// installFile copies the executable src to dst, which appears whole or
// not at all.
func installFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("install into %s: %w", filepath.Dir(dst), err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// jobCommands are the Slurm commands a job finds on its PATH, each the sluice binary
// under that name: srun, and scontrol for `scontrol show hostnames`.
var jobCommands = []string{"srun", "scontrol"}
