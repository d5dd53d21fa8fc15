// Package sluiceproc runs the real `sluice server` binary as a child process
// for end-to-end tests: it builds ./cmd/sluice once per test binary, starts
// servers in their own process groups, waits for them to listen, stops or
// crashes them, and installs the CRDs and the example site they schedule for.
//
// It is a package of its own, not part of test/e2e, because it imports
// slurmapi/kube (for the scheme of Sluice's kinds) and slurmapi/kube's tests
// import test/e2e. It imports nothing from test/e2e for the same reason, so
// test/e2e's own tests may use it.
package sluiceproc

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// build is this test binary's compile of ./cmd/sluice, started by Main.
var build struct {
	done chan struct{} // closed when the compiler has finished (or never ran)
	dir  string        // the private directory, removed by Main
	path string
	err  error
}

// Main starts compiling ./cmd/sluice, runs run (the package's e2e.Main, which
// starts the rig and runs the tests), then removes the binary and returns
// run's exit code. Call it from TestMain:
//
//	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.DefaultSpec()) }))
//
// The compile runs while the rig starts: each takes tens of seconds on a
// loaded machine, and overlapped they cost the longer of the two instead of
// the sum. With -short nothing is built, as no test runs a server.
func Main(run func() int) int {
	flag.Parse() // for -short; e2e.Main parses again, harmlessly
	build.done = make(chan struct{})
	if testing.Short() {
		build.err = errors.New("sluice is not built with -short")
		close(build.done)
		return run()
	}
	// A temporary directory, not bin/: `make test` builds no bin/sluice, and
	// a stale one must never be the binary under test.
	build.dir, build.err = os.MkdirTemp("", "sluice-bin-")
	if build.err != nil {
		close(build.done)
	} else {
		go compile(filepath.Join(build.dir, "sluice"))
	}
	code := run()
	// A run whose rig failed may end before the compiler does; removing the
	// directory under it would leave it writing into nothing.
	<-build.done
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// compile runs `go build` by import path, so it works from any package
// directory of the module.
func compile(path string) {
	defer close(build.done)
	out, err := exec.Command("go", "build", "-o", path, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		build.err = fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
		return
	}
	// The launcher's PMIx server lies beside it, as in the sluice image;
	// without libpmix-dev there is none, and srun --mpi=pmix says so.
	if err := launchtest.CompilePMIxServer(filepath.Join(filepath.Dir(path), launch.PMIxHelper)); err != nil && !errors.Is(err, launchtest.ErrNoPMIx) {
		build.err = err
		return
	}
	build.path = path
}

// Binary waits for the build Main started and returns the binary's path; a
// failed build fails the test with the compiler's output.
func Binary(t testing.TB) string {
	t.Helper()
	if build.done == nil {
		t.Fatal("no sluice build: call sluiceproc.Main from the package's TestMain")
	}
	<-build.done
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}
