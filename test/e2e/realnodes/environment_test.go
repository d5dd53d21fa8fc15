package realnodes

import (
	"strings"
	"testing"
	"time"
)

// TestExportedEnvironmentReachesEveryTask: a variable sbatch exports reaches the batch
// script and the tasks srun starts on both nodes, through the environment Secret the
// real kubelet mounts (the pod spec carries none of it); the submitting shell's token
// (SLURM_JWT, which the CLI has in its environment) does not.
func TestExportedEnvironmentReachesEveryTask(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J env -N 2 -o env-%j.txt
echo "batch secret=$SECRET_TOKEN jwt=${SLURM_JWT:-none}"
srun -l bash -c 'echo "task secret=$SECRET_TOKEN"'
`, "--export=ALL,SECRET_TOKEN=s3cr3t-value")
	if st := s.waitEnd(t, id, 4*time.Minute); st != "COMPLETED" {
		t.Fatalf("job %s ended %s:\n%s", id, st, s.tryRead("env-"+id+".txt"))
	}
	out := s.readShared(t, "env-"+id+".txt")
	for _, want := range []string{"batch secret=s3cr3t-value jwt=none", "0: task secret=s3cr3t-value", "1: task secret=s3cr3t-value"} {
		if !strings.Contains(out, want) {
			t.Errorf("job %s printed\n%s\nwant %q", id, out, want)
		}
	}
	for _, p := range pods(t, id) {
		for _, e := range p.Spec.Containers[0].Env {
			if strings.Contains(e.Value, "s3cr3t-value") {
				t.Errorf("pod %s carries %s in its spec", p.Name, e.Name)
			}
		}
	}
}
