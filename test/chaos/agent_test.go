package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// TestNodeAgentKilledMidReport: the remediation agent of a busy node,
// reporting its health several times a second, is SIGKILLed (wherever it
// is in a report) and started again, as its DaemonSet would. A torn report
// must not read as a fault: the node is never quarantined, nothing on it is
// drained or requeued, and the new agent reports the node healthy again.
func TestNodeAgentKilledMidReport(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has NVIDIA GPUs: a `sluice agent` process would read them, not the simulated node's")
	}
	f := begin(t, 1, "")
	rig := e2e.Rig(t)
	const node = "h100-0"
	dir := t.TempDir()
	faults := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(faults, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(sluiceproc.Binary(t), "agent", "--node-name", node, "--kubeconfig", rig.Kubeconfig,
			"--fault-file", faults, "--sysfs-root", filepath.Join(dir, "no-infiniband"), "--poll", "100ms")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	agent := start()
	t.Cleanup(func() { _ = syscall.Kill(-agent.Process.Pid, syscall.SIGKILL) })
	heartbeat := waitHealthy(t, node, time.Time{})

	at := time.Now()
	if err := syscall.Kill(-agent.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	agent = start()
	// The new agent reads the node and reports; an unchanged healthy node is not
	// written again, so what shows is that it keeps running and the node stays healthy.
	exited := make(chan error, 1)
	go func() { exited <- agent.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the restarted agent exited: %v", err)
	case <-time.After(2 * time.Second): // twenty polls
	}
	waitHealthy(t, node, time.Time{})
	t.Logf("agent of %s killed and restarted; the node stayed healthy (last heartbeat %s)", node, heartbeat.Format(time.StampMilli))
	f.end("node agent SIGKILLed", at, 0)
	n, err := rig.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == health.QuarantineTaint {
			t.Errorf("%s quarantined after its agent was killed: %v", node, n.Spec.Taints)
		}
	}
	if n.Spec.Unschedulable {
		t.Errorf("%s cordoned after its agent was killed", node)
	}
}

// waitHealthy waits until the node's agent reports no XID fault with a
// heartbeat after since, and returns that heartbeat.
func waitHealthy(t *testing.T, node string, since time.Time) time.Time {
	t.Helper()
	var beat time.Time
	e2e.WaitFor(t, "the agent reports "+node+" healthy", time.Minute, func(ctx context.Context) (bool, error) {
		n, err := e2e.Rig(t).Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeConditionType(health.GPUXidError) {
				beat = c.LastHeartbeatTime.Time
				ok := c.Status == corev1.ConditionFalse && beat.After(since)
				return ok, fmt.Errorf("%s %s at %s", c.Type, c.Status, beat.Format(time.StampMilli))
			}
		}
		return false, fmt.Errorf("no %s condition yet", health.GPUXidError)
	})
	return beat
}
