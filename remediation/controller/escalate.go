package controller

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/remediation/health"
)

// Escalation says when repeated faults mean the node needs hardware repair rather than one
// more reset or reboot.
type Escalation struct {
	// SameXID within XIDWindow escalates (default 3 in 24h).
	SameXID   int
	XIDWindow time.Duration
	// Remediations within RemediationWindow escalate (default 5 in 7 days).
	Remediations      int
	RemediationWindow time.Duration
}

// escalates judges a node's history, which already includes the fault at hand.
func (e Escalation) escalates(history []health.Fault, now time.Time) (bool, string) {
	perXID := map[uint64]int{}
	recent := 0
	for _, f := range history {
		if now.Sub(f.At) < e.XIDWindow {
			for _, x := range f.XIDs {
				perXID[x]++
				if perXID[x] >= e.SameXID {
					return true, fmt.Sprintf("XID %d %d times within %s", x, perXID[x], e.XIDWindow)
				}
			}
		}
		if now.Sub(f.At) < e.RemediationWindow {
			recent++
		}
	}
	if recent >= e.Remediations {
		return true, fmt.Sprintf("%d remediations within %s", recent, e.RemediationWindow)
	}
	return false, ""
}

// prune drops history older than both windows.
func (e Escalation) prune(history []health.Fault, now time.Time) []health.Fault {
	keep := max(e.XIDWindow, e.RemediationWindow)
	out := history[:0:0]
	for _, f := range history {
		if now.Sub(f.At) < keep {
			out = append(out, f)
		}
	}
	return out
}
