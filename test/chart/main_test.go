// Package chart tests the Helm chart in charts/sluice: it lints and renders
// with helm, checks the schema refuses bad values, keeps the chart's copies
// of the CRDs and the example site equal to their sources, and applies the
// rendered manifests to the local rig to prove its RBAC is enough for the
// server and no more.
package chart

import (
	"flag"
	"os"
	"testing"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// sluice is the binary run with the chart's credentials, compiled while the
// rig starts.
var sluice *sluiceproc.Build

// One rig for the package (none with -short).
func TestMain(m *testing.M) {
	flag.Parse()
	sluice = sluiceproc.StartBuild()
	code := e2e.Main(m, cluster.DefaultSpec())
	sluice.Remove()
	os.Exit(code)
}
