package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// enterWorkDir changes to the job's working directory, as slurmstepd does before it
// runs the script or a step's tasks; one it cannot enter (not there on this node's
// filesystems, or not the user's to enter) sends the job to /tmp with Slurm's message,
// and the job runs on.
func enterWorkDir(dir string, stderr io.Writer) {
	if dir == "" {
		return
	}
	if err := os.Chdir(dir); err != nil {
		fmt.Fprintf(stderr, "slurmstepd: error: couldn't chdir to `%s': %s: going to /tmp instead\n", dir, strerror(err))
		_ = os.Chdir("/tmp")
	}
}

// strerror is err's system error as C's strerror words it ("No such file or
// directory"), as Slurm's messages quote it.
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	s := errno.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
