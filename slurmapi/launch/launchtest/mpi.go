package launchtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// mpichCC is MPICH's compiler wrapper, or "" (Debian's mpicc may be
// Open MPI's when both are installed; mpicc.mpich is MPICH's).
func mpichCC() string {
	for _, cc := range []string{"mpicc.mpich", "mpicc"} {
		p, err := exec.LookPath(cc)
		if err != nil {
			continue
		}
		if out, err := exec.Command(p, "-show").Output(); err == nil && strings.Contains(string(out), "mpich") {
			return p
		}
	}
	return ""
}

// BuildMPI compiles src with MPICH into dir, or skips the test.
func BuildMPI(t testing.TB, dir, src string) string {
	t.Helper()
	cc := mpichCC()
	if cc == "" {
		t.Skip("no MPICH mpicc (Debian: apt-get install mpich libmpich-dev; hack/test-deps.sh installs them)")
	}
	c := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	if out, err := exec.Command(cc, "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return bin
}
