package chart

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// repoRoot is the repository root (RepoRoot); this package lives in test/chart.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t testing.TB) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// helmBinary finds helm where `make tools` puts it (HelmBinary); -short skips the test.
func helmBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs helm: skipped with -short")
	}
	p, err := HelmBinary("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// helm runs helm (Helm) and returns its stdout, or an error carrying its stderr.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return Helm(helmBinary(t), args...)
}

// render is `helm template` of the chart as release "sluice" in namespace,
// with the CRDs, decoded into objects.
func render(t testing.TB, namespace string, valuesFiles ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"--include-crds"}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	objs, err := Render(helmBinary(t), namespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the object of kind whose name ends in suffix.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o.GetKind()]++
	}
	return n
}

// writeValues writes a values file for one test case. Its directory is not
// t.TempDir(): that is named after the test, and helm splits --values at
// commas, which test names built from flow YAML contain.
func writeValues(t testing.TB, yaml string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluice-values-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
