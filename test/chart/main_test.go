// Package chart tests the Helm chart in charts/sluice: it lints and renders
// with helm, checks the schema refuses bad values, keeps the chart's copies
// of the CRDs and the example site equal to their sources, and applies the
// rendered manifests to the local rig to prove its RBAC is enough for the
// server and no more.
package chart

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// One rig for the package (none with -short); sluice, run with the chart's
// credentials, compiles while it starts.
func TestMain(m *testing.M) {
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.DefaultSpec()) }))
}
