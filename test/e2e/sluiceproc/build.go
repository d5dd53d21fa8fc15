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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build is one compile of ./cmd/sluice into a private directory. Start it in
// TestMain before the rig: compiling and starting the control plane each take
// tens of seconds on a loaded machine, and overlapped they cost the longer of
// the two instead of the sum.
type Build struct {
	done chan struct{} // closed when the compiler has finished (or never ran)
	dir  string        // the private directory, removed by Remove
	path string
	err  error
}

// StartBuild starts compiling ./cmd/sluice in the background and returns at
// once. It builds into a temporary directory, not bin/: `make test` builds no
// bin/sluice, and a stale one must never be the binary under test. Call it
// after flag.Parse: with -short nothing is built, as no test runs a server.
func StartBuild() *Build {
	b := &Build{done: make(chan struct{})}
	if testing.Short() {
		b.err = fmt.Errorf("sluice is not built with -short")
		close(b.done)
		return b
	}
	b.dir, b.err = os.MkdirTemp("", "sluice-bin-")
	if b.err != nil {
		close(b.done)
		return b
	}
	go b.compile(filepath.Join(b.dir, "sluice"))
	return b
}

// compile runs `go build` by import path, so it works from any package
// directory of the module.
func (b *Build) compile(path string) {
	defer close(b.done)
	out, err := exec.Command("go", "build", "-o", path, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		b.err = fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
		return
	}
	b.path = path
}

// Binary waits for the build and returns the binary's path; a failed build
// fails the test with the compiler's output.
func (b *Build) Binary(t testing.TB) string {
	t.Helper()
	<-b.done
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the build's directory. It first waits for a compiler still
// running (a run whose rig failed may end before the build does), which would
// otherwise write its output into a directory already removed.
func (b *Build) Remove() {
	<-b.done
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
