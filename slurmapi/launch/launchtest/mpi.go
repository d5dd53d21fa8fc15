package launchtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch"
)

// MPIProgram prints, for each rank, its rank and size, the node Sluice
// started it on (SLURM_NODEID), MPI's processor name, how many ranks MPI counts on its
// node (from PMI_process_mapping) and the sum of rank+1 over all ranks
// (MPI_Allreduce).
const MPIProgram = `#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	int rank, size, len, local, one, sum = 0;
	char name[MPI_MAX_PROCESSOR_NAME];
	MPI_Comm node;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(name, &len);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	MPI_Comm_size(node, &local);
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	const char *n = getenv("SLURM_NODEID");
	printf("rank %d size %d node %s local %d sum %d name %s\n", rank, size, n ? n : "?", local, sum, name);
	fflush(stdout); /* written even if finalize hangs and the rank is killed */
	MPI_Comm_free(&node);
	/* Every rank done with the allreduce before any tears down. Debian 12's MPICH 4.0.2
	   (ch4:ucx) can still hang in MPI_Finalize: one rank closing its UCX endpoints waits
	   for a peer already in the PMI barrier that ends finalize (pmodels/mpich#6596). */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
`

// mpiCC is the first of ccs whose `ccs... flag` output names the MPI (Debian's mpicc
// may be either MPI's when both are installed), or "".
func mpiCC(ccs []string, flag, names string) string {
	for _, cc := range ccs {
		p, err := exec.LookPath(cc)
		if err != nil {
			continue
		}
		if out, err := exec.Command(p, flag).CombinedOutput(); err == nil && strings.Contains(string(out), names) {
			return p
		}
	}
	return ""
}

// buildWith compiles src into dir/name with the MPI compiler wrapper cc, or skips the
// test saying what to install when there is none.
func buildWith(t testing.TB, cc, install, dir, name, src string) string {
	t.Helper()
	if cc == "" {
		t.Skip(install)
	}
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(cc, "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return bin
}

// BuildMPI compiles src with MPICH (mpicc.mpich, or an mpicc that is MPICH's) into dir,
// or skips the test.
func BuildMPI(t testing.TB, dir, src string) string {
	t.Helper()
	return buildWith(t, mpiCC([]string{"mpicc.mpich", "mpicc"}, "-show", "mpich"),
		"no MPICH mpicc (Debian: apt-get install mpich libmpich-dev; hack/test-deps.sh installs them)", dir, "prog", src)
}

// BuildOpenMPI compiles src with Open MPI into dir, or skips the test.
func BuildOpenMPI(t testing.TB, dir, src string) string {
	t.Helper()
	return buildWith(t, mpiCC([]string{"mpicc.openmpi", "mpicc"}, "-showme:version", "Open MPI"),
		"no Open MPI mpicc (Debian: apt-get install openmpi-bin libopenmpi-dev; hack/test-deps.sh installs them)", dir, "prog-ompi", src)
}

// PMIxServerSource is the launcher's PMIx server, a C program.
func PMIxServerSource() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "pmix", "sluice-pmix.c")
}

// ErrNoPMIx: this machine cannot build the PMIx server.
var ErrNoPMIx = errors.New("no PMIx headers to build the launcher's PMIx server (Debian: apt-get install libpmix-dev; hack/test-deps.sh installs it)")

// CompilePMIxServer compiles the launcher's PMIx server into out, as `make
// build` does (bin/sluice-pmix beside bin/sluice); ErrNoPMIx without
// libpmix-dev.
func CompilePMIxServer(out string) error {
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "pmix").Output()
	if err != nil {
		return ErrNoPMIx
	}
	args := append([]string{"-O2", "-Wall", "-o", out, PMIxServerSource()}, strings.Fields(string(flags))...)
	if b, err := exec.Command("gcc", append(args, "-lpthread")...).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc %s: %w\n%s", PMIxServerSource(), err, b)
	}
	return nil
}

// BuildPMIxServer compiles the PMIx server into dir as launch.PMIxHelper,
// or skips the test without libpmix-dev.
func BuildPMIxServer(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, launch.PMIxHelper)
	if err := CompilePMIxServer(bin); errors.Is(err, ErrNoPMIx) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	return bin
}

// InstallPMIxServer puts the PMIx server beside the test binary, where the
// sluice image has it beside sluice, so the init container's install
// copies it into the pods' launcher directory.
func InstallPMIxServer(t testing.TB) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := BuildPMIxServer(t, filepath.Dir(self))
	t.Cleanup(func() { os.Remove(bin) })
}
