package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/remediation/agent"
)

// TestNodeFaultEndsJobNodeFail: a job without --requeue drained off a faulty node ends
// NODE_FAIL (not PREEMPTED, as a scheduler eviction would leave it), in the REST view
// and in the ledger.
func TestNodeFaultEndsJobNodeFail(t *testing.T) {
	s := startSite(t, h100Nodes()...)
	id := s.submit("#!/bin/bash\n#SBATCH -J fragile -N 1 --gres=gpu:h100:8 --no-requeue\ntorchrun train.py\n")
	s.waitState(id, "RUNNING", 90*time.Second)
	node := s.waitRunningPods(id, 1)[0].Spec.NodeName
	s.inject(node, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 0, XID: 79}}})
	j := s.waitState(id, "NODE_FAIL", time.Minute)
	if j.StateReason != "NodeDown" {
		t.Errorf("NODE_FAIL job's reason %q, want NodeDown", j.StateReason)
	}
	if states, _ := s.ledgerStates(id, accounting.StateNodeFail, 30*time.Second); len(states) == 0 {
		t.Error("no ledger transitions")
	}
	s.inject(node, nil)
	s.passValidation(node, time.Minute)
	s.waitNode(node, "back in service", time.Minute, func(n *corev1.Node) bool { return !tainted(n) && phase(n) == "" })
}
