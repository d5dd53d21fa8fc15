package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCopiesMatchTheirSources: the chart carries copies of the generated CRDs
// and of the example site (Helm cannot read outside the chart). After `make
// generate` or an edit of examples/site.yaml this fails until the copies are
// refreshed: cp k8sscheduler/apis/crds/*.yaml charts/sluice/crds/ and
// cp examples/site.yaml charts/sluice/files/site.yaml.
func TestCopiesMatchTheirSources(t *testing.T) {
	root := repoRoot(t)
	tests := []struct{ name, source, copy, glob string }{
		{"CRDs", "k8sscheduler/apis/crds", "charts/sluice/crds", "*.yaml"},
		{"example site", "examples", "charts/sluice/files", "site.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := files(t, filepath.Join(root, tc.source), tc.glob)
			dst := files(t, filepath.Join(root, tc.copy), tc.glob)
			if len(src) == 0 {
				t.Fatalf("no %s in %s", tc.glob, tc.source)
			}
			if !slices.Equal(src, dst) {
				t.Fatalf("%s has %v, %s has %v: copy them again", tc.copy, dst, tc.source, src)
			}
			for _, name := range src {
				a, errA := os.ReadFile(filepath.Join(root, tc.source, name))
				b, errB := os.ReadFile(filepath.Join(root, tc.copy, name))
				if errA != nil || errB != nil {
					t.Fatal(errA, errB)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s/%s differs from %s/%s: copy it again", tc.copy, name, tc.source, name)
				}
			}
		})
	}
}

func files(t *testing.T, dir, glob string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	slices.Sort(names)
	return names
}
