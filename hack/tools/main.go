// Command tools builds the local rig's binaries into ./bin: the Kubernetes
// control plane (kube-apiserver, kube-controller-manager, kube-scheduler),
// etcd, kwok, the kubelet and CoreDNS of the rig's real nodes, controller-gen
// and helm. Each binary is pinned by one of the
// nested modules next to this file and is rebuilt only when it is missing or
// was built from another version (a stamp file records what built it).
//
// Usage: go run ./hack/tools [-bin DIR] [-only name,name] [-list]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// tool is one binary and where it comes from.
type tool struct {
	name    string // file name under bin/
	dir     string // nested module (relative to hack/tools) that pins it
	module  string // module whose version the stamp records
	pkg     string // main package to build
	ldflags func(version string) string
}

// kubeVersion stamps the control-plane binaries the way Kubernetes' own
// build does, so /version and --version report v1.37.2 rather than v0.0.0.
func kubeVersion(v string) string {
	gitVersion := "v1" + strings.TrimPrefix(v, "v0") // v0.37.2 staging tag -> v1.37.2
	if strings.HasPrefix(v, "v1.") {
		gitVersion = v
	}
	parts := strings.SplitN(strings.TrimPrefix(gitVersion, "v"), ".", 3)
	base := "k8s.io/component-base/version"
	return fmt.Sprintf("-s -w -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
		base, gitVersion, parts[0], parts[1])
}

func plain(string) string { return "-s -w" }

var tools = []tool{
	{"etcd", "etcd", "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3", plain},
	{"kube-apiserver", "kube", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver", kubeVersion},
	{"kube-controller-manager", "kube", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager", kubeVersion},
	{"kube-scheduler", "kube", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler", kubeVersion},
	// The real nodes' kubelet (test/cluster/realnode.go) and the cluster DNS that serves
	// their pods the <pod>.<service> names.
	{"kubelet", "kube", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kubelet", kubeVersion},
	{"coredns", "coredns", "github.com/coredns/coredns", "github.com/coredns/coredns", plain},
	{"kwok", "kwok", "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok", func(v string) string {
		return "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=" + strings.TrimPrefix(v, "v")
	}},
	{"controller-gen", "kube", "sigs.k8s.io/controller-tools", "sigs.k8s.io/controller-tools/cmd/controller-gen", plain},
	{"helm", "kube", "helm.sh/helm/v4", "helm.sh/helm/v4/cmd/helm", plain},
	// make lint's static analysis beside go vet (staticcheck.conf says which checks).
	{"staticcheck", "staticcheck", "honnef.co/go/tools", "honnef.co/go/tools/cmd/staticcheck", plain},
}

func main() {
	binDir := flag.String("bin", "bin", "directory the binaries are written to")
	only := flag.String("only", "", "comma-separated tool names to build (default: all)")
	list := flag.Bool("list", false, "print each tool, its pinned version and whether it is up to date, then exit")
	flag.Parse()

	here, err := toolsDir()
	if err != nil {
		fail(err)
	}
	bin, err := filepath.Abs(*binDir)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(filepath.Join(bin, ".stamps"), 0o755); err != nil {
		fail(err)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	for n := range want {
		if !known(n) {
			fail(fmt.Errorf("unknown tool %q (have: %s)", n, names()))
		}
	}

	total := time.Now()
	built := 0
	for i, t := range tools {
		if len(want) > 0 && !want[t.name] {
			continue
		}
		modDir := filepath.Join(here, t.dir)
		version, err := moduleVersion(modDir, t.module)
		if err != nil {
			fail(fmt.Errorf("%s: %w", t.name, err))
		}
		stamp := fmt.Sprintf("%s@%s %s", t.module, version, runtime.Version())
		prefix := fmt.Sprintf("[%d/%d] %-24s %s", i+1, len(tools), t.name, version)
		if upToDate(bin, t.name, stamp) {
			fmt.Printf("%s: up to date\n", prefix)
			continue
		}
		if *list {
			fmt.Printf("%s: needs a build\n", prefix)
			continue
		}
		fmt.Printf("%s: building...\n", prefix)
		start := time.Now()
		if err := build(modDir, bin, t, version); err != nil {
			fail(fmt.Errorf("%s: %w", t.name, err))
		}
		if err := os.WriteFile(stampPath(bin, t.name), []byte(stamp+"\n"), 0o644); err != nil {
			fail(err)
		}
		built++
		fmt.Printf("%s: built in %s\n", prefix, time.Since(start).Round(time.Second))
	}
	if !*list {
		fmt.Printf("tools: %d built, all in %s (%s)\n", built, bin, time.Since(total).Round(time.Second))
	}
}

func build(modDir, bin string, t tool, version string) error {
	out := filepath.Join(bin, t.name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", t.ldflags(version), "-o", out+".tmp", t.pkg)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", t.pkg, err)
	}
	return os.Rename(out+".tmp", out)
}

func moduleVersion(modDir, module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading the pinned version of %s in %s: %w", module, modDir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func stampPath(bin, name string) string { return filepath.Join(bin, ".stamps", name) }

func upToDate(bin, name, stamp string) bool {
	if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
		return false
	}
	got, err := os.ReadFile(stampPath(bin, name))
	return err == nil && strings.TrimSpace(string(got)) == stamp
}

// toolsDir finds hack/tools whether we run from the repository root or from
// hack/tools itself.
func toolsDir() (string, error) {
	for _, d := range []string{"hack/tools", "."} {
		if _, err := os.Stat(filepath.Join(d, "kube", "go.mod")); err == nil {
			return filepath.Abs(d)
		}
	}
	return "", fmt.Errorf("run from the repository root (hack/tools/kube/go.mod not found)")
}

func known(n string) bool {
	for _, t := range tools {
		if t.name == n {
			return true
		}
	}
	return false
}

func names() string {
	var s []string
	for _, t := range tools {
		s = append(s, t.name)
	}
	return strings.Join(s, ", ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tools:", err)
	os.Exit(1)
}
