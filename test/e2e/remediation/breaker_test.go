package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/cluster"
)

// TestCircuitBreakerHoldsAtThreshold: XID 79 on both nodes of the two-node a100
// partition quarantines exactly one (the default 50%); the other keeps its True
// condition, stays in service with a QuarantineDeferred event, and stays in after the
// first one returns, since that quarantine still counts within the breaker window.
func TestCircuitBreakerHoldsAtThreshold(t *testing.T) {
	nodes := []string{cluster.NodeName("a100", 0), cluster.NodeName("a100", 1)}
	s := startSite(t, nodes...)
	s.waitBreakerWindow(nodes)
	for _, n := range nodes {
		s.inject(n, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 0, XID: 79}}})
	}
	for _, n := range nodes {
		s.waitNode(n, "GPUXidError True", 30*time.Second, func(node *corev1.Node) bool {
			c := condition(node, health.GPUXidError)
			return c != nil && c.Status == corev1.ConditionTrue
		})
	}
	split := func() (out, in []string) {
		for _, n := range nodes {
			if tainted(s.node(n)) {
				out = append(out, n)
			} else {
				in = append(in, n)
			}
		}
		return out, in
	}
	deadline := time.Now().Add(30 * time.Second)
	out, _ := split()
	for ; len(out) == 0 && time.Now().Before(deadline); out, _ = split() {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a breaker that leaks would have taken the second node by now
	out, in := split()
	if len(out) != 1 || len(in) != 1 {
		t.Fatalf("quarantined %v, in service %v; want exactly one of the two", out, in)
	}
	if !s.hasEvent(in[0], "QuarantineDeferred") {
		t.Errorf("no QuarantineDeferred event on %s", in[0])
	}
	if phase(s.node(in[0])) != "" {
		t.Errorf("held-back node %s entered remediation: %q", in[0], phase(s.node(in[0])))
	}

	// The quarantined node is repaired and returns; its quarantine still fills the
	// window, so the other node, still faulty, stays in.
	s.inject(out[0], nil)
	s.passValidation(out[0], time.Minute)
	s.waitNode(out[0], "back in service", time.Minute, func(n *corev1.Node) bool { return !tainted(n) && phase(n) == "" })
	time.Sleep(3 * time.Second)
	if tainted(s.node(in[0])) {
		t.Errorf("%s quarantined after the first node returned, within the breaker window", in[0])
	}
	s.inject(in[0], nil)
	s.waitNode(in[0], "GPUXidError False", 30*time.Second, func(node *corev1.Node) bool {
		c := condition(node, health.GPUXidError)
		return c != nil && c.Status == corev1.ConditionFalse
	})
}

// waitBreakerWindow waits until no node's last quarantine counts in the breaker window
// any more (an earlier run on this rig may have left one).
func (s *site) waitBreakerWindow(nodes []string) {
	s.t.Helper()
	var last time.Time
	for _, n := range nodes {
		st, _ := health.ParseRemediation(s.node(n).Annotations)
		for _, f := range st.History {
			if f.Quarantined && f.At.After(last) {
				last = f.At
			}
		}
	}
	if wait := time.Until(last.Add(breakerWindow + time.Second)); wait > 0 {
		s.t.Logf("waiting %s for a quarantine at %s to leave the breaker window", wait.Round(time.Second), last.Format(time.TimeOnly))
		time.Sleep(wait)
	}
}
