package launch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// TestMPICHAcrossTwoNodes: srun --mpi=pmi2 (here SLURM_MPI_TYPE, its
// default) wires an MPICH program up across a two-node job's launchers:
// two ranks, one on each node, see each other (size 2, the allreduce's
// sum) and each is alone on its node; four ranks, two on each node, see
// their node's two.
func TestMPICHAcrossTwoNodes(t *testing.T) {
	dir := t.TempDir()
	bin := launchtest.BuildMPI(t, dir, launchtest.MPIProgram)
	script := "#!/bin/sh\nexport SLURM_MPI_TYPE=pmi2\n" +
		"srun -N2 -n2 " + bin + " | sed 's/^/two: /'\n" +
		"srun -n4 " + bin + " | sed 's/^/four: /'\n"
	nodes := startJob(t, 2, 0, script, dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q %q", rc, nodes[0].Stdout().All(), nodes[0].Stderr().All())
	}
	wantTwoAndFourRanks(t, nodes)
}

// TestMPIAbortEndsTheStep: a rank's MPI_Abort ends every rank of the
// step, on every node, instead of leaving the others waiting in a
// barrier; srun says which task aborted and fails.
func TestMPIAbortEndsTheStep(t *testing.T) {
	dir := t.TempDir()
	bin := launchtest.BuildMPI(t, dir, `#include <mpi.h>
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
	script := "#!/bin/sh\nsrun --mpi=pmi2 -N2 -n2 " + bin + "\necho srun=$?\n"
	nodes := startJob(t, 2, 0, script, dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	out, errs := nodes[0].Stdout().All(), strings.Join(nodes[0].Stderr().All(), "\n")
	if len(out) != 1 || out[0] == "srun=0" {
		t.Errorf("srun's status: %q, want it failed", out)
	}
	if !strings.Contains(errs, ": task 1: PMI abort (MPI_Abort) (exit code 3): terminating StepId=42.0") {
		t.Errorf("srun's errors do not name the abort:\n%s", errs)
	}
}

// TestSlurmLibPMI2AcrossTwoNodes speaks PMI-2 through Slurm's own client
// library (Debian's libpmi2-0-dev; skipped without it), as Intel MPI and
// MVAPICH built against it do: init, job id and process mapping, a put
// whose value has a ";", a fence across the nodes and a get of another
// rank's key, a node attribute.
func TestSlurmLibPMI2AcrossTwoNodes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "pmi2.c")
	if err := os.WriteFile(src, []byte(`#include <slurm/pmi2.h>
#include <stdio.h>
int main(void) {
	int spawned, size, rank, appnum, found, len;
	char jobid[64], map[256], key[32], val[64], attr[32];
	if (PMI2_Init(&spawned, &size, &rank, &appnum) != PMI2_SUCCESS)
		return 1;
	PMI2_Job_GetId(jobid, sizeof jobid);
	PMI2_Info_GetJobAttr("PMI_process_mapping", map, sizeof map, &found);
	snprintf(key, sizeof key, "k%d", rank);
	snprintf(val, sizeof val, "v;%d", rank);
	PMI2_KVS_Put(key, val);
	PMI2_KVS_Fence();
	snprintf(key, sizeof key, "k%d", (rank + 1) % size);
	int rc = PMI2_KVS_Get(jobid, PMI2_ID_NULL, key, val, sizeof val, &len);
	PMI2_Info_PutNodeAttr("a", "x");
	PMI2_Info_GetNodeAttr("a", attr, sizeof attr, &found, 1);
	printf("rank %d size %d job %s map %s next %s rc %d attr %s\n", rank, size, jobid, map, val, rc, attr);
	return PMI2_Finalize();
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "pmi2")
	if out, err := exec.Command("gcc", "-o", bin, src, "-lpmi2").CombinedOutput(); err != nil {
		t.Skipf("no Slurm libpmi2 to build with (Debian: libpmi2-0-dev): %s", out)
	}
	nodes := startJob(t, 2, 0, "#!/bin/sh\nsrun --mpi=pmi2 -n3 "+bin+"\n", dir)
	if rc := finish(t, nodes); rc != 0 {
		t.Fatalf("batch host exited %d: %q", rc, nodes[0].Stderr().All())
	}
	got := nodes[0].Stdout().All()
	slices.Sort(got)
	want := []string{
		"rank 0 size 3 job 42.0 map (vector,(0,1,2),(1,1,1)) next v;1 rc 0 attr x",
		"rank 1 size 3 job 42.0 map (vector,(0,1,2),(1,1,1)) next v;2 rc 0 attr x",
		"rank 2 size 3 job 42.0 map (vector,(0,1,2),(1,1,1)) next v;0 rc 0 attr x",
	}
	if !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantTwoAndFourRanks checks what launchtest.MPIProgram printed, prefixed "two: " and
// "four: ", for 2 ranks on 2 nodes and 4 ranks on 2 nodes: each rank's size, node, the
// ranks on its node and the allreduce's sum (the processor name is this machine's).
func wantTwoAndFourRanks(t *testing.T, nodes []*launchtest.Node) {
	t.Helper()
	var got []string
	for _, l := range nodes[0].Stdout().All() {
		l, _, _ = strings.Cut(l, " name ")
		got = append(got, l)
	}
	slices.Sort(got)
	want := []string{
		"four: rank 0 size 4 node 0 local 2 sum 10",
		"four: rank 1 size 4 node 0 local 2 sum 10",
		"four: rank 2 size 4 node 1 local 2 sum 10",
		"four: rank 3 size 4 node 1 local 2 sum 10",
		"two: rank 0 size 2 node 0 local 1 sum 3",
		"two: rank 1 size 2 node 1 local 1 sum 3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s\nstderr: %q\nnode 1 stderr: %q", strings.Join(got, "\n"), strings.Join(want, "\n"),
			nodes[0].Stderr().All(), nodes[1].Stderr().All())
	}
}
