package launch_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// TestHeldAllocationReleasedWhenItsSallocIsGone: salloc holds its allocation
// with a connection; when the last hold goes (salloc killed, its machine cut
// off) and none comes back within the inactive limit, the launcher releases
// the allocation (status 129, a hung-up shell's) instead of leaving the job
// RUNNING until its time limit. A second hold keeps it while the first goes.
func TestHeldAllocationReleasedWhenItsSallocIsGone(t *testing.T) {
	nodes := startAllocation(t, 2, corev1.EnvVar{Name: launch.EnvInactiveLimit, Value: "2"})
	url := relayServer(t, nodes[0].Addr)
	waitListening(t, nodes[0].Addr)
	c := &client.Client{URL: url, Token: "token", HTTP: http.DefaultClient}

	first, dropFirst := context.WithCancel(context.Background())
	second, dropSecond := context.WithCancel(context.Background())
	var log strings.Builder
	firstDone := make(chan struct{})
	go func() { launch.Hold(first, c, 42, &log, func() {}); close(firstDone) }()
	secondUp := make(chan struct{})
	go launch.Hold(second, c, 42, &log, func() { close(secondUp) })
	<-secondUp
	time.Sleep(500 * time.Millisecond) // both holds connected
	dropFirst()
	<-firstDone
	time.Sleep(3 * time.Second) // past the inactive limit: the second hold keeps the job
	var out strings.Builder
	rc, err := launch.Attach(context.Background(), url, "token", 42, launch.AttachRequest{Argv: []string{"echo", "still here"}},
		launch.Terminal{Out: &out, Err: io.Discard})
	if err != nil || rc != 0 || !strings.Contains(out.String(), "still here") {
		t.Fatalf("with one hold left the allocation is gone: %d %v %q", rc, err, out.String())
	}

	dropSecond() // the last hold: released after the limit
	if rc := finish(t, nodes); rc != 129 {
		t.Errorf("the batch host exited %d, want 129 (released without a holder); stderr %q", rc, nodes[0].Stderr().All())
	}
	if !strings.Contains(strings.Join(nodes[0].Stderr().All(), "\n"), "inactive limit") {
		t.Errorf("the launcher did not say why it released the allocation: %q", nodes[0].Stderr().All())
	}
	if log.Len() > 0 {
		t.Errorf("a hold that ended normally warned: %q", log.String())
	}
}
