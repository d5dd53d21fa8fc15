package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Each failed create doubles the job's wait, up to a minute; while it waits the job is
// kept out of placement with the failure as its reason.
func TestCreateBackoff(t *testing.T) {
	now := time.Date(2026, 12, 4, 7, 0, 0, 0, time.UTC)
	g := &groupEntry{key: "slurm-nlp/job-9"}
	refused := errors.New(`pods "job-9-0" is forbidden: exceeded quota`)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		if got := g.backOffCreate(refused, now); got != want {
			t.Fatalf("failure %d: wait %s, want %s", i+1, got, want)
		}
	}
	tests := []struct {
		name    string
		at      time.Time
		blocked bool
	}{
		{"right after the failure", now, true},
		{"a second before the wait ends", now.Add(59 * time.Second), true},
		{"when the wait ends", now.Add(time.Minute), false},
		{"after it", now.Add(2 * time.Minute), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g.blocked = nil
			if got := g.waitsToRetryCreate(tc.at); got != tc.blocked {
				t.Fatalf("waits %v, want %v", got, tc.blocked)
			}
			if !tc.blocked {
				return
			}
			if g.blocked == nil || g.blocked.Code != v1alpha1.ReasonPodCreateFailed || !strings.Contains(g.blocked.Reason, "exceeded quota") || !strings.Contains(g.blocked.Reason, "1m0s") {
				t.Errorf("blocked as %+v, want PodCreateFailed naming the quota and the minute", g.blocked)
			}
		})
	}
}
