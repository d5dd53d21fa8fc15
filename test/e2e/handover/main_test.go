// Package handover runs two real `sluice server` processes against the rig
// and checks that leader election makes them safe: only the Lease holder
// schedules, and killing it hands scheduling to the other replica without a
// pod being bound twice.
package handover

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// binary is the sluice binary built for this run. The build starts before
// the rig, so the two overlap instead of adding up.
var binary struct {
	done chan struct{} // closed when the build has finished
	path string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	ctrllog.SetLogger(klog.Background()) // the site client's warnings, on stderr like the rest
	binary.done = make(chan struct{})
	dir, err := os.MkdirTemp("", "sluice-handover-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "handover:", err)
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

// buildSluice compiles ./cmd/sluice as `make build` does, but into a private
// path: `make test` builds no bin/sluice, and a stale one must not be tested.
func buildSluice(path string) {
	defer close(binary.done)
	out, err := exec.Command("go", "build", "-o", path, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		binary.err = fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
		return
	}
	binary.path = path
}

// sluiceBinary waits for the build and returns the binary's path.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	<-binary.done
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}
