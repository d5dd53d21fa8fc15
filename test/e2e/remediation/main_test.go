// Package remediation is the end-to-end suite of GPU remediation with Slurm jobs: a real
// `sluice server` (scheduler, Slurm REST API and job lifecycle, accounting ledger,
// remediation controller, wired as in production) runs against the rig, with one agent
// per node reading that node's fault-injection file. It checks that a node fault
// quarantines and drains the node and requeues the Slurm job on healthy nodes, that the
// node comes back only through a validation pod, that a GPU-local fault evicts only that
// GPU's pods, and that the circuit breaker holds at its threshold.
package remediation

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// binary is the sluice binary built for this run; the build overlaps the rig's start.
var binary struct {
	done chan struct{} // closed when the build has finished
	path string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	// The test's own controller-runtime clients have nothing to log.
	ctrllog.SetLogger(logr.Discard())
	binary.done = make(chan struct{})
	dir, err := os.MkdirTemp("", "sluice-remediation-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "remediation e2e:", err)
		os.Exit(1)
	}
	if testing.Short() {
		close(binary.done) // no rig, no test needs the binary
	} else {
		go buildSluice(filepath.Join(dir, "sluice"))
	}
	code := e2e.Main(m, cluster.DefaultSpec())
	<-binary.done // a failed run must not leave the compiler writing into dir
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildSluice compiles ./cmd/sluice into a private path: `make test` builds no
// bin/sluice, and a stale one must not be tested.
func buildSluice(path string) {
	defer close(binary.done)
	out, err := exec.Command("go", "build", "-o", path, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		binary.err = fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
		return
	}
	binary.path = path
}

func sluiceBinary(t *testing.T) string {
	t.Helper()
	<-binary.done
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}
