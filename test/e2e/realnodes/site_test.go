package realnodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// site is the package's `sluice server`, as installed, on the real-node rig, and the
// directory every job pod mounts (a hostPath, which on this one machine is
// the same directory for every node: a shared filesystem, as /home is on Slurm).
type site struct {
	url, token string
	bobToken   string // bob's (account vision), for what two users' jobs share
	shared     string
	bin        string
}

var (
	siteOnce sync.Once
	theSite  *site
	siteErr  error
)

// startSite starts the server once for the package (stopped before the rig) and
// imports the sluice image this test binary built into the real nodes.
func startSite(t *testing.T) *site {
	t.Helper()
	rig := e2e.Rig(t)
	siteOnce.Do(func() { theSite, siteErr = newSite(t, rig) })
	if siteErr != nil {
		t.Fatal(siteErr)
	}
	return theSite
}

func newSite(t *testing.T, rig *cluster.Cluster) (*site, error) {
	ctx := context.Background()
	bin := sluiceproc.Binary(t)
	if err := rig.LoadSluiceImage(ctx, bin); err != nil {
		return nil, err
	}
	crs := sluiceproc.InstallSite(t, rig.RESTConfig())
	shared, err := os.MkdirTemp("", "sluice-shared-")
	if err != nil {
		return nil, err
	}
	e2e.BeforeRigStop(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o1777); err != nil { // every user's jobs write here, as to /tmp
		return nil, err
	}
	// Mounted at the same path as on the host, as a site mounts /home at one path on
	// login and compute nodes alike: a job's working directory and output paths mean
	// the same file everywhere.
	filesystem := map[string]any{"name": "shared", "mountPath": shared, "partitions": []any{"real", "realdra"},
		"hostPath": map[string]any{"path": shared, "type": "Directory"}}
	part := &v1alpha1.Partition{
		ObjectMeta: metav1.ObjectMeta{Name: "real"},
		Spec: v1alpha1.PartitionSpec{
			NodeSelector: map[string]string{cluster.LabelPartition: "real"},
			DefaultImage: cluster.JobImage,
		},
	}
	if err := crs.Create(ctx, part); err != nil {
		return nil, fmt.Errorf("create partition real: %w", err)
	}
	// The DRA node's partition: its jobs' GPUs are claims of gpu.nvidia.com.
	dra := &v1alpha1.Partition{
		ObjectMeta: metav1.ObjectMeta{Name: "realdra"},
		Spec: v1alpha1.PartitionSpec{
			NodeSelector:   map[string]string{cluster.LabelPartition: "realdra"},
			DefaultImage:   cluster.JobImage,
			GPUDeviceClass: cluster.DeviceClassGPU,
		},
	}
	if err := crs.Create(ctx, dra); err != nil {
		return nil, fmt.Errorf("create partition realdra: %w", err)
	}
	if err := rig.GPUReservationAccess(ctx, reservationNamespace, reservationAccount); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-realnodes-")
	if err != nil {
		return nil, err
	}
	e2e.BeforeRigStop(func() { os.RemoveAll(dir) })
	keyFile, token := sluiceproc.KeyAndToken(t, dir, "alice")
	server := sluiceproc.Launch(t, "sluice server", map[string]any{
		"kubeconfig": rig.ServerKubeconfig, "stateDir": filepath.Join(dir, "state"), "listen": "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false}, "webhook": map[string]any{"enabled": false},
		"rest": map[string]any{"jwtKeyFile": keyFile},
		"slurm": map[string]any{
			"launcherImage": cluster.SluiceImage,
			"inactiveLimit": "10s", // a salloc gone is released in seconds, not a minute
			"filesystems":   []any{filesystem},
			"users": map[string]any{"alice": map[string]any{"uid": 1001, "gid": 1001},
				"bob": map[string]any{"uid": 1002, "gid": 1002}},
		},
		"scheduler": map[string]any{"gpuReservationImage": cluster.SluiceImage,
			"gpuReservationNamespace": reservationNamespace, "gpuReservationServiceAccount": reservationAccount},
	})
	e2e.BeforeRigStop(func() {
		if os.Getenv("SLUICE_E2E_SERVER_LOG") != "" {
			fmt.Fprintln(os.Stderr, server.Log())
		}
		server.Stop()
	})
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, err
	}
	bobToken, err := slurmapi.MintToken(key, "bob", time.Hour)
	if err != nil {
		return nil, err
	}
	return &site{url: "http://" + server.Addr(), token: token, bobToken: bobToken, shared: shared, bin: bin}, nil
}

// Where GPU reservation pods run and as whom: as the chart installs them, a
// ServiceAccount that may get and patch the pods of its namespace (each reports the
// device the kubelet gave it on its own pod).
const (
	reservationNamespace = "sluice-system"
	reservationAccount   = "sluice-gpu-reservation"
)

// sluice runs the CLI as alice, as she would from a login node, and returns its
// output; a non-zero exit fails the test.
func (s *site) sluice(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.try(args...)
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (s *site) try(args ...string) (string, error) { return s.tryAs(s.token, args...) }

// tryAs runs the CLI with token's user from the shared directory; its output is stdout
// then stderr, combined.
func (s *site) tryAs(token string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(os.Environ(), "SLUICE_URL="+s.url, "SLURM_JWT="+token)
	cmd.Dir = s.shared
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sbatch submits a script from the shared directory (the job's working directory)
// and returns its id.
func (s *site) sbatch(t *testing.T, script string, args ...string) string {
	t.Helper()
	return s.sbatchAs(t, s.token, script, args...)
}

// sbatchAs submits as token's user.
func (s *site) sbatchAs(t *testing.T, token, script string, args ...string) string {
	t.Helper()
	path := filepath.Join(s.shared, fmt.Sprintf("job-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(append([]string{"sbatch", "-p", "real"}, args...), path)
	out, err := s.tryAs(token, args...)
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, line := range strings.Split(out, "\n") { // after any warnings
		if id, ok := strings.CutPrefix(line, "Submitted batch job "); ok {
			id = strings.TrimSpace(id)
			// A test that fails leaves no job holding the two real nodes for the next.
			t.Cleanup(func() {
				if t.Failed() {
					_, _ = s.tryAs(token, "scancel", id)
				}
			})
			return id
		}
	}
	t.Fatalf("sbatch printed %q", out)
	return ""
}

// state is the job's state as squeue, then sacct (once it has left the queue), show it.
func (s *site) state(t *testing.T, id string) string { t.Helper(); return s.stateAs(t, s.token, id) }

// stateAs is the state token's user sees.
func (s *site) stateAs(t *testing.T, token, id string) string {
	t.Helper()
	out, err := s.tryAs(token, "squeue", "-h", "-j", id, "-o", "%T")
	if st := strings.TrimSpace(out); err == nil && st != "" {
		return st
	}
	out, err = s.tryAs(token, "sacct", "-n", "-X", "-P", "-j", id, "-o", "State")
	if err != nil {
		t.Fatalf("sacct -j %s: %v\n%s", id, err, out)
	}
	return strings.Fields(strings.TrimSpace(out) + " ?")[0]
}

// waitEnd waits for the job to end and returns its final state.
func (s *site) waitEnd(t *testing.T, id string, timeout time.Duration) string {
	t.Helper()
	return s.waitEndAs(t, s.token, id, timeout)
}

// waitEndAs is waitEnd for token's user's job.
func (s *site) waitEndAs(t *testing.T, token, id string, timeout time.Duration) string {
	t.Helper()
	var st string
	e2e.WaitFor(t, "job "+id+" to end", timeout, func(context.Context) (bool, error) {
		st = s.stateAs(t, token, id)
		switch st {
		case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED":
			return true, nil
		}
		return false, fmt.Errorf("state %s", st)
	})
	return st
}

// waitRunning waits until the job's batch host runs its script.
func (s *site) waitRunning(t *testing.T, id string, timeout time.Duration) {
	t.Helper()
	e2e.WaitFor(t, "job "+id+" RUNNING", timeout, func(context.Context) (bool, error) {
		st := s.state(t, id)
		return st == "RUNNING", fmt.Errorf("state %s", st)
	})
}

// pods are the job's pods.
func pods(t *testing.T, id string) []corev1.Pod {
	t.Helper()
	list, err := e2e.Rig(t).Client().CoreV1().Pods(kube.Namespace("nlp")).List(context.Background(),
		metav1.ListOptions{LabelSelector: v1alpha1.JobIDLabel + "=" + id})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// readShared reads a file the job wrote to the shared directory.
func (s *site) readShared(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.shared, name))
	if err != nil {
		t.Fatalf("the job's file %s: %v", name, err)
	}
	return string(data)
}
