package chaos

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/e2e"
)

// probe measures recovery: from since (the fault), how long until new work
// goes through again, a Slurm job submitted now acknowledged and running and
// a manifest pod created now bound. Both are part of the load from then on.
func (l *load) probe(ctx context.Context, since time.Time) time.Duration {
	t := l.t
	t.Helper()
	i := l.sc.jobs + l.probes
	l.probes++
	pod := fmt.Sprintf("probe-%d", i)
	done := make(chan struct{})
	go func() { defer close(done); l.submit(ctx, 0, i) }()
	if err := l.createPod(ctx, pod); err != nil {
		t.Fatalf("probe pod: %v", err)
	}
	<-done
	l.mu.Lock()
	id := l.acked[i]
	l.mu.Unlock()
	client := e2e.Rig(t).Client()
	e2e.WaitFor(t, "new work bound after the fault", l.sc.settleTime, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(l.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, fmt.Errorf("probe pod %s not bound (%v)", pod, err)
		}
		pods, err := client.CoreV1().Pods(kube.Namespace("nlp")).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", v1alpha1.JobIDLabel, id)})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Errorf("probe job %d has no pod yet (%v)", id, err)
		}
		return true, nil
	})
	return time.Since(since)
}

// measured is one fault's line in the suite's summary.
type measured struct {
	fault    string
	outage   time.Duration // how long the fault itself lasted (0: an instant, such as a kill)
	recovery time.Duration // from the fault to new work bound
	finished time.Duration // from the load's start to all of it done
	l        *load
}

var summary struct {
	mu    sync.Mutex
	lines []string
}

// report logs one fault's figures and keeps them for the summary.
func report(t *testing.T, m measured) {
	t.Helper()
	line := fmt.Sprintf("chaos %-28s scale=%s outage=%-6s recovered=%-8s all-done=%-8s jobs=%d pods=%d submit-retries=%d replica-restarts=%d",
		m.fault, m.l.sc.name, m.outage.Round(100*time.Millisecond), m.recovery.Round(100*time.Millisecond),
		m.finished.Round(100*time.Millisecond), len(m.l.jobIDs()), len(m.l.podNames()), m.l.retries.Load(), m.l.site.restarts())
	t.Log(line)
	summary.mu.Lock()
	summary.lines = append(summary.lines, line)
	summary.mu.Unlock()
}

func printSummary() {
	summary.mu.Lock()
	defer summary.mu.Unlock()
	if len(summary.lines) == 0 {
		return
	}
	fmt.Fprintln(os.Stderr, "chaos summary (recovered: from the fault to new work bound; all-done: from the burst's start):")
	for _, l := range summary.lines {
		fmt.Fprintln(os.Stderr, "  "+l)
	}
}
