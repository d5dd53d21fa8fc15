package launch_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// TestOpenMPIAcrossTwoNodes: srun --mpi=pmix wires an Open MPI program up
// across a two-node job's launchers through each node's PMIx server, with
// no mpirun: two ranks, one on each node, see each other (size 2, the
// allreduce's sum) and each is alone on its node; four ranks, two on each
// node, see their node's two.
func TestOpenMPIAcrossTwoNodes(t *testing.T) {
	dir := t.TempDir()
	bin := launchtest.BuildOpenMPI(t, dir, launchtest.MPIProgram)
	launchtest.InstallPMIxServer(t)
	// Both "nodes" are this machine: one hostname, one /dev/shm, where
	// Open MPI's shared-memory transport names its files by hostname, job
	// and local rank, so each node's ranks get a directory of their own
	// (on real nodes, as on the rig's, each pod has its own).
	shm := `sh -c 'd=` + dir + `/shm$SLURM_NODEID; mkdir -p $d; OMPI_MCA_btl_vader_backing_directory=$d exec "$0"' `
	script := "#!/bin/sh\n" +
		"srun --mpi=pmix -N2 -n2 " + bin + " | sed 's/^/two: /'\n" +
		"srun --mpi=pmix_v4 -n4 " + shm + bin + " | sed 's/^/four: /'\n"
	nodes := startJob(t, 2, 0, script, dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q %q", rc, nodes[0].Stdout().All(), nodes[0].Stderr().All())
	}
	wantTwoAndFourRanks(t, nodes)
}

// TestOpenMPIAbortEndsTheStep: an Open MPI rank's MPI_Abort reaches its
// node's PMIx server, which ends every rank of the step on every node;
// srun names the task and fails.
func TestOpenMPIAbortEndsTheStep(t *testing.T) {
	dir := t.TempDir()
	bin := launchtest.BuildOpenMPI(t, dir, `#include <mpi.h>
int main(int argc, char **argv) {
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 1)
		MPI_Abort(MPI_COMM_WORLD, 3);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
`)
	launchtest.InstallPMIxServer(t)
	nodes := startJob(t, 2, 0, "#!/bin/sh\nsrun --mpi=pmix -N2 -n2 "+bin+"\necho srun=$?\n", dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	out, errs := nodes[0].Stdout().All(), strings.Join(nodes[0].Stderr().All(), "\n")
	if len(out) != 1 || out[0] == "srun=0" {
		t.Errorf("srun's status: %q, want it failed", out)
	}
	if !strings.Contains(errs, ": task 1: PMIx abort") || !strings.Contains(errs, "terminating StepId=42.0") {
		t.Errorf("srun's errors do not name the abort:\n%s", errs)
	}
}

// TestPMIxWithoutItsServerSaysWhy: a launcher installed without its PMIx
// server (an image built without it) refuses --mpi=pmix in one line that
// says what is missing and names pmi2, and the step runs nothing.
func TestPMIxWithoutItsServerSaysWhy(t *testing.T) {
	dir := t.TempDir()
	nodes := startJob(t, 1, 0, "#!/bin/sh\nsrun --mpi=pmix -n1 echo ran\necho srun=$?\n", dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	out, errs := nodes[0].Stdout().All(), strings.Join(nodes[0].Stderr().All(), "\n")
	if slices.Contains(out, "ran") || slices.Contains(out, "srun=0") {
		t.Errorf("the step ran or srun succeeded: %q", out)
	}
	if !strings.Contains(errs, "no PMIx server beside the launcher") || !strings.Contains(errs, "--mpi=pmi2") {
		t.Errorf("srun's error does not say why:\n%s", errs)
	}
}
