// Package launchtest runs a Slurm job's pods as local processes, as the
// pods run them: the init container's command installs the launcher (the
// test binary standing in for sluice), then the container's command runs
// with the container's environment. Only paths and addresses move: the
// pod's directories to temporary ones, the launchers' Service names to
// 127.0.0.1 ports. Call Dispatch first in TestMain.
package launchtest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// Dispatch runs the test binary as sluice or srun when a pod's command
// started it under that name, and exits; otherwise it returns.
func Dispatch() {
	args := os.Args
	switch filepath.Base(args[0]) {
	case "sluice":
		if len(args) > 1 && args[1] == "launch" {
			os.Exit(launch.Main(args[2:], os.Getenv, os.Stdout, os.Stderr))
		}
		if len(args) == 3 && args[1] == "install-launcher" {
			if err := launch.Install(args[2]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "launchtest: sluice %v is not a launcher command\n", args[1:])
		os.Exit(2)
	case "srun":
		os.Exit(launch.Srun(args[1:], os.Getenv, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
	}
}

// Node is one pod running as a local process.
type Node struct {
	Pod     *corev1.Pod
	Cmd     *exec.Cmd
	Root    string // the pod's directories live under it
	TermLog string // its termination message file
	Addr    string // where its launcher listens (the pod's IP and port 6818)
	out     *Lines
	err     *Lines
}

// Stdout and Stderr are what the container wrote (its pod log).
func (n *Node) Stdout() *Lines { return n.out }
func (n *Node) Stderr() *Lines { return n.err }

// Wait waits for the container to end and returns its exit status.
func (n *Node) Wait() int {
	// Every line is read before Wait closes the pipes (os/exec's rule).
	n.out.wait()
	n.err.wait()
	_ = n.Cmd.Wait() // the status is read from ProcessState
	return n.Cmd.ProcessState.ExitCode()
}

// TerminationMessage is what the container left for the kubelet.
func (n *Node) TerminationMessage() string {
	b, _ := os.ReadFile(n.TermLog)
	return string(b)
}

// Start runs pods (a job's, in node order) as local processes; key is the
// content of the job's launch key Secret, and secrets are the other
// Secrets the pods mount (the job's environment), each written as the
// kubelet writes a Secret volume: a file per field. Processes still
// running when the test ends are killed.
func Start(t testing.TB, pods []*corev1.Pod, key string, secrets ...*corev1.Secret) []*Node {
	t.Helper()
	byName := map[string]*corev1.Secret{}
	for _, s := range secrets {
		byName[s.Name] = s
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, len(pods))
	for i := range pods {
		addrs[i] = FreeAddr(t)
	}
	// The peers list is by node index, which need not be the pods' order (the
	// factory numbers nodes as their names sort, the core binds them as it likes).
	peers := make([]string, len(pods))
	for i, pod := range pods {
		k, err := v1alpha1.ParseNodeIndex(pod.Labels[v1alpha1.NodeIndexLabel])
		if err != nil || k < 0 || k >= len(pods) || peers[k] != "" {
			t.Fatalf("pod %s: node index label %q", pod.Name, pod.Labels[v1alpha1.NodeIndexLabel])
		}
		peers[k] = addrs[i]
	}
	nodes := make([]*Node, len(pods))
	for i, pod := range pods {
		root := t.TempDir()
		moves := map[string]string{}
		for _, v := range pod.Spec.Volumes {
			dir := filepath.Join(root, v.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if v.Secret != nil {
				files := map[string][]byte{"key": []byte(key)}
				if s := byName[v.Secret.SecretName]; s != nil {
					files = s.Data
				}
				for name, b := range files {
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o444); err != nil {
						t.Fatal(err)
					}
				}
			}
			if v.EmptyDir != nil || v.Secret != nil {
				for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
					for _, m := range c.VolumeMounts {
						if m.Name == v.Name {
							moves[m.MountPath] = dir
						}
					}
				}
			}
		}
		for _, ic := range pod.Spec.InitContainers {
			// The sluice image's binary is the test binary.
			cmd := &exec.Cmd{Path: self, Args: append([]string{"sluice"}, move(ic.Command[1:], moves)...)}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("init container %s of %s: %v: %s", ic.Name, pod.Name, err, out)
			}
		}
		c := pod.Spec.Containers[0]
		argv := move(c.Command, moves)
		env := []string{"PATH=" + os.Getenv("PATH"), "HOSTNAME=" + pod.Spec.Hostname}
		for _, e := range c.Env {
			v := e.Value
			switch e.Name {
			case launch.EnvPeers:
				v = strings.Join(peers, ",")
			case launch.EnvDir, launch.EnvRunDir, launch.EnvKeyFile, launch.EnvUserEnvFile:
				v = move([]string{v}, moves)[0]
			}
			env = append(env, e.Name+"="+v)
		}
		termLog := filepath.Join(root, "termination-log")
		env = append(env, launch.EnvAddr+"="+addrs[i], launch.EnvTerminationLog+"="+termLog)
		cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: env, Dir: c.WorkingDir}
		n := &Node{Pod: pod, Cmd: cmd, Root: root, TermLog: termLog, Addr: addrs[i]}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		n.out, n.err = readLines(stdout), readLines(stderr)
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		nodes[i] = n
	}
	return nodes
}

// move rewrites the pod's paths in args to where they are on this machine.
func move(args []string, moves map[string]string) []string {
	keys := make([]string, 0, len(moves))
	for k := range moves {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		for _, k := range keys {
			if a == k || strings.HasPrefix(a, k+"/") {
				out[i] = moves[k] + a[len(k):]
				break
			}
		}
	}
	return out
}

// FreeAddr is a 127.0.0.1 address whose port nothing listens on just now.
func FreeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// Lines collects a stream's lines as they come.
type Lines struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines []string
	done  bool
}

func readLines(r io.Reader) *Lines {
	l := &Lines{}
	l.cond = sync.NewCond(&l.mu)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.cond.Broadcast()
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.done = true
		l.cond.Broadcast()
		l.mu.Unlock()
	}()
	return l
}

func (l *Lines) wait() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.done {
		l.cond.Wait()
	}
}

// All is every line so far.
func (l *Lines) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// WaitFor blocks until a line equal to each of want has been written
// (in any order); false if the stream ended first.
func (l *Lines) WaitFor(want ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		missing := false
		for _, w := range want {
			found := false
			for _, line := range l.lines {
				found = found || line == w
			}
			missing = missing || !found
		}
		if !missing {
			return true
		}
		if l.done {
			return false
		}
		l.cond.Wait()
	}
}
