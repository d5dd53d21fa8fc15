package realnodes

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// TestBatchJobRunsInAContainer: a one-node batch job's script runs in the job image as
// alice's uid, writes its --output and --error files to the shared filesystem, owned by
// alice, and its exit code is the job's, in squeue/sacct and in the pod's log.
func TestBatchJobRunsInAContainer(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J real-batch -o out-%j.txt -e err-%j.txt
echo "uid=$(id -u) gid=$(id -g) job=$SLURM_JOB_ID node=$SLURMD_NODENAME host=$(hostname)"
echo "cwd=$(pwd)"
echo "to stderr" >&2
exit 3
`)
	if st := s.waitEnd(t, id, 3*time.Minute); st != "FAILED" {
		t.Fatalf("job %s ended %s, want FAILED (exit 3)", id, st)
	}
	out := s.readShared(t, "out-"+id+".txt")
	if !strings.Contains(out, "uid=1001 gid=1001 job="+id) {
		t.Errorf("the script did not run as alice (uid 1001) in job %s:\n%s", id, out)
	}
	if !strings.Contains(out, "cwd="+s.shared) {
		t.Errorf("the script did not start in the submit directory %s:\n%s", s.shared, out)
	}
	if got := s.readShared(t, "err-"+id+".txt"); strings.TrimSpace(got) != "to stderr" {
		t.Errorf("--error file holds %q", got)
	}
	info, err := os.Stat(filepath.Join(s.shared, "out-"+id+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); st.Uid != 1001 || st.Gid != 1001 {
		t.Errorf("the output file belongs to %d:%d, want alice's 1001:1001", st.Uid, st.Gid)
	}
	if got := s.sluice(t, "sacct", "-n", "-X", "-P", "-j", id, "-o", "State,ExitCode"); strings.TrimSpace(got) != "FAILED|3:0" {
		t.Errorf("sacct -j %s: %q, want FAILED|3:0", id, got)
	}
}

// TestJobLogIsTheContainersOutput: what the script prints reaches its slurm-%j.out in
// the submit directory and the container's log, which `sluice logs` reads through the
// API server from the kubelet (the README's first real job).
func TestJobLogIsTheContainersOutput(t *testing.T) {
	s := startSite(t)
	id := s.sluice(t, "sbatch", "-p", "real", "--parsable",
		"--wrap", "echo hello from the container; head -1 /etc/os-release; nvidia-smi -L || echo no driver")
	id = strings.TrimSpace(id)
	if st := s.waitEnd(t, id, 3*time.Minute); st != "COMPLETED" {
		t.Fatalf("job %s ended %s", id, st)
	}
	logs := s.sluice(t, "logs", id)
	file := s.readShared(t, "slurm-"+id+".out")
	for _, want := range []string{"hello from the container", "Debian", "no driver"} {
		if !strings.Contains(logs, want) {
			t.Errorf("sluice logs %s lacks %q:\n%s", id, want, logs)
		}
		if !strings.Contains(file, want) {
			t.Errorf("slurm-%s.out lacks %q:\n%s", id, want, file)
		}
	}
}

// TestTwoNodeSrunCrossesThePodNetwork: srun -l hostname in a two-node job runs one task
// on each node, reached through the other pod's DNS name and the pod network, and the
// steps reach the ledger from the batch host's termination message. The names the job
// sees are the nodes' names, as sacct shows them, and the MASTER_ADDR recipe of torchrun
// and Lightning guides gives node 0, which every task resolves to the batch host's pod.
func TestTwoNodeSrunCrossesThePodNetwork(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J two-node -N 2 -o two-%j.txt
srun -l hostname
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
echo "master=$MASTER_ADDR nodelist=$SLURM_JOB_NODELIST batch=$(hostname)"
srun -l getent hosts "$MASTER_ADDR"
scontrol show job "$SLURM_JOB_ID" | grep -o 'BatchHost=[^ ]*'
`)
	if st := s.waitEnd(t, id, 4*time.Minute); st != "COMPLETED" {
		t.Fatalf("job %s ended %s:\n%s", id, st, s.tryRead("two-"+id+".txt"))
	}
	out := s.readShared(t, "two-"+id+".txt")
	lines := regexp.MustCompile(`(?m)^(\d+): (\S+)$`).FindAllStringSubmatch(out, -1)
	var tasks, hosts []string
	for _, l := range lines {
		tasks, hosts = append(tasks, l[1]), append(hosts, l[2])
	}
	slices.Sort(tasks)
	slices.Sort(hosts)
	if !slices.Equal(tasks, []string{"0", "1"}) || len(slices.Compact(hosts)) != 2 {
		t.Fatalf("srun -l hostname printed %q, want one line from each of two hosts (tasks 0 and 1)", out)
	}
	var nodes []string
	var batch corev1.Pod
	for _, p := range pods(t, id) {
		nodes = append(nodes, p.Spec.NodeName)
		if p.Labels[v1alpha1.NodeIndexLabel] == "0" {
			batch = p
		}
	}
	slices.Sort(nodes)
	if len(slices.Compact(slices.Clone(nodes))) != 2 || !slices.Equal(hosts, nodes) {
		t.Errorf("job %s's tasks ran on hosts %v; its pods are on nodes %v (want the same names)", id, hosts, nodes)
	}
	nodeList := strings.TrimSpace(s.sluice(t, "sacct", "-n", "-X", "-P", "-j", id, "-o", "NodeList"))
	want := fmt.Sprintf("master=%s nodelist=%s batch=%s", batch.Spec.NodeName, nodeList, batch.Spec.NodeName)
	if !strings.Contains(out, want) {
		t.Errorf("the batch script printed\n%s\nwant %q: MASTER_ADDR the batch host's node, the node list as sacct shows it", out, want)
	}
	if want := "BatchHost=" + batch.Spec.NodeName; !strings.Contains(out, want) {
		t.Errorf("scontrol show job inside the job printed no %q:\n%s", want, out)
	}
	resolved := regexp.MustCompile(`(?m)^(\d+): (\S+)[ \t]+[^\n]*\b`+regexp.QuoteMeta(batch.Spec.NodeName)+`\b`).FindAllStringSubmatch(out, -1)
	if len(resolved) != 2 || resolved[0][2] != batch.Status.PodIP || resolved[1][2] != batch.Status.PodIP {
		t.Errorf("getent hosts $MASTER_ADDR on each node gave %q; want the batch pod's IP %s from both tasks:\n%s", resolved, batch.Status.PodIP, out)
	}
	steps := s.sluice(t, "sacct", "-n", "-P", "-j", id, "-o", "JobID,State,ExitCode")
	for _, want := range []string{id + ".batch|COMPLETED|0:0", id + ".0|COMPLETED|0:0", id + ".1|COMPLETED|0:0"} {
		if !strings.Contains(steps, want) {
			t.Errorf("sacct -j %s lacks step %q:\n%s", id, want, steps)
		}
	}
}

// tryRead is a file of the shared directory for a failure message, or why not.
func (s *site) tryRead(name string) string {
	data, err := os.ReadFile(filepath.Join(s.shared, name))
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(data)
}

// TestRequeueRunsTheScriptAgain: scontrol requeue of a running job ends its pods and
// runs the script again in new ones; SLURM_RESTART_COUNT tells the second run, and
// --open-mode=append keeps both runs' lines in the output file.
func TestRequeueRunsTheScriptAgain(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J requeue-me --requeue -o requeue-%j.txt --open-mode=append
echo "run restart=${SLURM_RESTART_COUNT:-0}"
if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then sleep 600; fi
`)
	waitFile(t, s, "requeue-"+id+".txt", "run restart=0")
	s.sluice(t, "scontrol", "requeue", id)
	if st := s.waitEnd(t, id, 4*time.Minute); st != "COMPLETED" {
		t.Fatalf("job %s ended %s after its requeue:\n%s", id, st, s.tryRead("requeue-"+id+".txt"))
	}
	if out := s.readShared(t, "requeue-"+id+".txt"); !strings.Contains(out, "run restart=0\n") || !strings.Contains(out, "run restart=1\n") {
		t.Errorf("the output file has not both runs' lines (--open-mode=append), or the second did not see SLURM_RESTART_COUNT=1:\n%s", out)
	}
}
