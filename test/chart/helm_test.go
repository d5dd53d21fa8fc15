package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// repoRoot is the repository root: this package lives in test/chart.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", "sluice") }

// helmBinary finds helm where `make tools` puts it: $SLUICE_ASSETS, then bin/.
func helmBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs helm: skipped with -short")
	}
	dirs := []string{filepath.Join(repoRoot(t), "bin")}
	if d := os.Getenv("SLUICE_ASSETS"); d != "" {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		p := filepath.Join(d, "helm")
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("helm not found in %s: run `make tools` to build it", strings.Join(dirs, " or "))
	return ""
}

// helm runs helm and returns its stdout, or an error carrying its stderr.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBinary(t), args...)
	// No user config or cache leaks in, nothing is written outside the test.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String() + "\n" + err.Error()))
	}
	return stdout.String(), nil
}

// render is `helm template` of the chart as release "sluice" in namespace,
// with the CRDs, decoded into objects.
func render(t testing.TB, namespace string, valuesFiles ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "sluice", chartDir(t), "--namespace", namespace, "--include-crds"}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatalf("decoding helm template's output: %v", err)
	}
	return objs
}

func decode(manifests string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue // an empty document
		}
		// Unstructured's own JSON decoding keeps integers as int64.
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
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
