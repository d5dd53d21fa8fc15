package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestNodeFaultRequeuesSlurmJob: XID 79 (node reboot) on one node of a running 2-node
// --requeue job quarantines the node (taint, DRAIN in the Slurm nodes view) and drains
// it; the job goes back to PENDING (REQUEUED in the ledger) and runs again on two
// healthy nodes. After the repair the validation pod runs on the node and the node
// returns. It logs fault -> taint and fault -> drained.
func TestNodeFaultRequeuesSlurmJob(t *testing.T) {
	s := startSite(t, h100Nodes()...)
	ctx := context.Background()

	id := s.submit("#!/bin/bash\n#SBATCH -J resilient -N 2 --ntasks-per-node=8 --gres=gpu:h100:8 --requeue\ntorchrun train.py\n")
	phases := s.watchPhases(id)
	pods := s.watchPods(id)
	s.waitState(id, "RUNNING", 90*time.Second)
	first := s.waitRunningPods(id, 2)
	if first[0].Spec.NodeName == first[1].Spec.NodeName {
		t.Fatalf("job %d's pods share node %s, want one on each of two nodes", id, first[0].Spec.NodeName)
	}
	faulty := first[0].Spec.NodeName

	injected := time.Now()
	s.inject(faulty, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 0, XID: 79}}})
	taintedAt := s.waitNode(faulty, "quarantine taint", 30*time.Second, tainted)
	drainedAt := s.waitDrained(faulty, 30*time.Second)
	t.Logf("XID 79 injected on %s -> node tainted: %s; -> all pods drained: %s",
		faulty, taintedAt.Sub(injected).Round(time.Millisecond), drainedAt.Sub(injected).Round(time.Millisecond))

	if p := pods.pod(first[0].Name); p == nil || !strings.Contains(p.Annotations[health.NodeFaultAnnotation], "XID 79") {
		t.Errorf("evicted pod %s was not marked with the fault (%s)", first[0].Name, health.NodeFaultAnnotation)
	}
	node, err := s.rest.Node(ctx, faulty)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(node.State, func(st string) bool { return strings.HasPrefix(st, "DRAIN") }) || node.Reason != "GPUXidError-XID79" {
		t.Errorf("Slurm nodes view of %s: state %v reason %q, want DRAIN with reason GPUXidError-XID79", faulty, node.State, node.Reason)
	}

	// Requeued, then placed again on two healthy nodes.
	var second []corev1.Pod
	e2e.WaitFor(t, fmt.Sprintf("job %d running again", id), 90*time.Second, func(ctx context.Context) (bool, error) {
		second = s.jobPods(ctx, id)
		fresh := len(second) == 2
		for _, p := range second {
			fresh = fresh && p.Spec.NodeName != "" && p.Name != first[0].Name && p.Name != first[1].Name
		}
		if !fresh {
			return false, fmt.Errorf("pods %v", nodesOf(second))
		}
		j, err := s.rest.Job(ctx, id)
		return err == nil && j.State() == "RUNNING", fmt.Errorf("job %v %v", j.JobState, err)
	})
	if got := nodesOf(second); slices.Contains(got, faulty) || got[0] == got[1] {
		t.Errorf("second run on %v, want two healthy nodes other than %s", got, faulty)
	}
	wantPhases := []groupPhase{{v1alpha1.PodGroupRunning, 0}, {v1alpha1.PodGroupPending, 1}, {v1alpha1.PodGroupRunning, 1}}
	if got := phases.phases(); !isSubsequence(wantPhases, got) {
		t.Errorf("PodGroup phases %v, want Running, then Pending with one requeue, then Running", got)
	}
	states, rec := s.ledgerStates(id, accounting.StateRequeued, 30*time.Second)
	if rec.RequeueCount != 1 {
		t.Errorf("ledger: requeue count %d, want 1 (transitions %v)", rec.RequeueCount, states)
	}

	// The actuator reboots the node: the XID is gone. Only a passing validation pod,
	// run on the node itself, brings it back.
	repaired := time.Now()
	s.inject(faulty, nil)
	validation := s.passValidation(faulty, time.Minute)
	if validation.Spec.NodeName != faulty {
		t.Errorf("validation pod %s runs on %q, want %s", validation.Name, validation.Spec.NodeName, faulty)
	}
	if validation.CreationTimestamp.Time.Before(repaired.Truncate(time.Second)) {
		t.Errorf("validation pod created at %s, before the fault cleared at %s", validation.CreationTimestamp, repaired)
	}
	returned := s.waitNode(faulty, "back in service", time.Minute, func(n *corev1.Node) bool { return !tainted(n) && phase(n) == "" })
	t.Logf("fault cleared -> validation passed, taint removed: %s", returned.Sub(repaired).Round(time.Millisecond))
	if c := condition(s.node(faulty), health.GPUXidError); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("returned node's GPUXidError = %+v, want False", c)
	}

	if err := s.rest.Cancel(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	s.waitState(id, "CANCELLED", 30*time.Second)
}

func nodesOf(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i := range pods {
		out[i] = pods[i].Spec.NodeName
	}
	return out
}

// isSubsequence reports whether want appears in got in order, other entries between.
func isSubsequence[T comparable](want, got []T) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
