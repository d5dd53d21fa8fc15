package bench

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The bind latency counts from a pod's creation, or from the scheduler's start for pods
// that waited in a backlog, to the first time the pod was seen bound; later updates of a
// bound pod do not move it.
func TestBindLatency(t *testing.T) {
	t0 := time.Now()
	cases := []struct {
		name     string
		since    time.Duration
		p50, max time.Duration
	}{
		{name: "stream: from each pod's creation", since: 0, p50: 30 * time.Millisecond, max: 50 * time.Millisecond},
		{name: "backlog: from the scheduler's start", since: 15 * time.Millisecond, p50: 25 * time.Millisecond, max: 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &podWatch{want: 3, seen: map[string]bool{}, bound: map[string]bool{}, running: map[string]bool{},
				podSeenAt: map[string]time.Time{}, podBoundAt: map[string]time.Time{},
				allSeen: make(chan struct{}), allBound: make(chan struct{}), allRunning: make(chan struct{})}
			// created at 0, 10, 20 ms; bound at 20, 40, 70 ms; the first is updated again later.
			for i, name := range []string{"a", "b", "c"} {
				w.podSeenAt[name], w.seen[name] = t0.Add(time.Duration(i)*10*time.Millisecond), true
			}
			for name, at := range map[string]time.Duration{"a": 20 * time.Millisecond, "b": 40 * time.Millisecond, "c": 70 * time.Millisecond} {
				w.podBoundAt[name], w.bound[name] = t0.Add(at), true
			}
			w.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.PodSpec{NodeName: "n1"}})
			p50, p99, max := w.bindLatency(t0.Add(tc.since))
			// Of 3 pods the 99th percentile is the slowest.
			if p50 != tc.p50 || p99 != tc.max || max != tc.max {
				t.Errorf("p50 %s p99 %s max %s, want %s, %s and %s", p50, p99, max, tc.p50, tc.max, tc.max)
			}
		})
	}
}
