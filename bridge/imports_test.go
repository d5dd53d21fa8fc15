package bridge

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStandardLibraryOnly keeps the core free of Kubernetes and every other module: a
// non-test file under bridge/ may import only the standard library (an import path whose
// first element has no dot). Test files may use gopkg.in/yaml.v3 for scenario files.
func TestStandardLibraryOnly(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !standardLibrary(p) {
				t.Errorf("%s imports %s: bridge/ may import only the standard library", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("checked only %d files; is the test running in bridge/?", checked)
	}
}

// standardLibrary reports whether an import path names a standard library package: module
// paths start with a domain, standard ones never have a dot in their first element.
func standardLibrary(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func TestStandardLibraryRecognisesModules(t *testing.T) {
	for _, tc := range []struct {
		path string
		std  bool
	}{
		{"k8s.io/api/core/v1", false},
		{"sigs.k8s.io/controller-runtime", false},
		{"gopkg.in/yaml.v3", false},
		{"github.com/sluicehq/sluice/slurmapi", false},
		{"fmt", true},
		{"go/parser", true},
	} {
		if got := standardLibrary(tc.path); got != tc.std {
			t.Errorf("standardLibrary(%q) = %v, want %v", tc.path, got, tc.std)
		}
	}
}
