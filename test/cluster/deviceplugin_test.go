package cluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// fakeKubelet is the kubelet's side of registration: a Registration server on
// kubelet.sock that passes each request on.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	srv  *grpc.Server
	regs chan *pluginapi.RegisterRequest
}

// startFakeKubelet serves kubelet.sock in dir. As a starting kubelet does, it first
// deletes every socket in the directory when wipe is set.
func startFakeKubelet(t *testing.T, dir string, regs chan *pluginapi.RegisterRequest, wipe bool) *fakeKubelet {
	t.Helper()
	if wipe {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Type()&os.ModeSocket != 0 {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	lis, err := net.Listen("unix", filepath.Join(dir, kubeletRegistrationSocket))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{srv: grpc.NewServer(), regs: regs}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.regs <- r
	return &pluginapi.Empty{}, nil
}

// lockedLog is a log the plugin writes while the test reads it.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitRegistration waits for the plugin's next Register call and checks it.
func waitRegistration(t *testing.T, regs <-chan *pluginapi.RegisterRequest, what string) {
	t.Helper()
	select {
	case r := <-regs:
		if r.Version != pluginapi.Version || r.Endpoint != devicePluginSocket || r.ResourceName != string(ResourceGPU) {
			t.Fatalf("%s: registered version %q endpoint %q resource %q, want %q %q %q", what,
				r.Version, r.Endpoint, r.ResourceName, pluginapi.Version, devicePluginSocket, ResourceGPU)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: the plugin did not register", what)
	}
}

// waitLogged waits until the plugin has logged n registrations, and fails if it logged more.
func waitLogged(t *testing.T, log *lockedLog, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := strings.Count(log.String(), "device plugin: registered ")
		if got > n || got < n && time.Now().After(deadline) {
			t.Fatalf("%d registrations logged, want %d:\n%s", got, n, log.String())
		}
		if got == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dialPlugin connects to the plugin's socket as the kubelet does.
func dialPlugin(t *testing.T, dir string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, devicePluginSocket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// checkListAndWatch checks that the plugin lists exactly ids, all healthy.
func checkListAndWatch(ctx context.Context, t *testing.T, c pluginapi.DevicePluginClient, ids []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range resp.Devices {
		if d.Health != pluginapi.Healthy {
			t.Errorf("device %s is %s, want %s", d.ID, d.Health, pluginapi.Healthy)
		}
		got = append(got, d.ID)
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("ListAndWatch listed %v, want %v", got, ids)
	}
}

// TestDevicePlugin runs the plugin against a stand-in kubelet: it registers once the
// kubelet is up, serves the API the kubelet calls, registers again after each kubelet
// restart, and stops cleanly.
func TestDevicePlugin(t *testing.T) {
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ids := []string{GPUUUID("gpu-0", 0), GPUUUID("gpu-0", 1), GPUUUID("gpu-0", 2), GPUUUID("gpu-0", 3)}

	// A stale socket from an earlier run must not stop the plugin.
	stale, err := net.Listen("unix", filepath.Join(dir, devicePluginSocket))
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = stale.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &lockedLog{}
	// The plugin starts before the kubelet, as it may on a node coming up.
	done, err := runDevicePlugin(ctx, dir, string(ResourceGPU), ids, log)
	if err != nil {
		t.Fatal(err)
	}
	regs := make(chan *pluginapi.RegisterRequest, 4)
	kubelet := startFakeKubelet(t, dir, regs, false)
	waitRegistration(t, regs, "first kubelet")
	waitLogged(t, log, 1)
	if !strings.Contains(log.String(), "device plugin: registered 4 nvidia.com/gpu with the kubelet at "+filepath.Join(dir, kubeletRegistrationSocket)+"\n") {
		t.Errorf("log lacks the registration line:\n%s", log.String())
	}

	plugin := dialPlugin(t, dir)
	opts, err := plugin.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.PreStartRequired || opts.GetPreferredAllocationAvailable {
		t.Errorf("options %v, want none", opts)
	}
	checkListAndWatch(ctx, t, plugin, ids)

	for _, tc := range []struct {
		name       string
		containers [][]string
		want       []string // NVIDIA_VISIBLE_DEVICES per container; nil with code
		code       codes.Code
	}{
		{name: "one container", containers: [][]string{{ids[2]}}, want: []string{ids[2]}},
		{name: "two containers", containers: [][]string{{ids[0], ids[3]}, {ids[1]}}, want: []string{ids[0] + "," + ids[3], ids[1]}},
		{name: "unknown device", containers: [][]string{{ids[0]}, {"GPU-not-on-this-node"}}, code: codes.InvalidArgument},
	} {
		t.Run("Allocate/"+tc.name, func(t *testing.T) {
			req := &pluginapi.AllocateRequest{}
			for _, c := range tc.containers {
				req.ContainerRequests = append(req.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: c})
			}
			resp, err := plugin.Allocate(ctx, req)
			if tc.code != codes.OK {
				if status.Code(err) != tc.code {
					t.Fatalf("Allocate: %v, want code %v", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ContainerResponses) != len(tc.want) {
				t.Fatalf("%d container responses, want %d", len(resp.ContainerResponses), len(tc.want))
			}
			for i, c := range resp.ContainerResponses {
				want := map[string]string{visibleDevicesEnv: tc.want[i]}
				if len(c.Envs) != 1 || c.Envs[visibleDevicesEnv] != tc.want[i] {
					t.Errorf("container %d: envs %v, want %v", i, c.Envs, want)
				}
				if len(c.Devices) != 0 || len(c.Mounts) != 0 || len(c.CdiDevices) != 0 || len(c.Annotations) != 0 {
					t.Errorf("container %d: got devices %v mounts %v CDI %v annotations %v, want only the env", i,
						c.Devices, c.Mounts, c.CdiDevices, c.Annotations)
				}
			}
		})
	}

	// A restarted kubelet has a new kubelet.sock and knows no plugin. The first restart
	// only recreates kubelet.sock; the second also deletes the plugin's socket, as a real
	// kubelet's device manager does when it starts.
	for i, wipe := range []bool{false, true} {
		kubelet.srv.Stop() // closes and removes kubelet.sock
		kubelet = startFakeKubelet(t, dir, regs, wipe)
		waitRegistration(t, regs, "restarted kubelet")
		checkListAndWatch(ctx, t, dialPlugin(t, dir), ids)
		waitLogged(t, log, i+2)
	}
	select {
	case r := <-regs:
		t.Errorf("registered again without a kubelet restart: %v", r)
	default:
	}

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not stop")
	}
	if _, err := os.Stat(filepath.Join(dir, devicePluginSocket)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plugin socket left behind: %v", err)
	}
}

// TestDevicePluginSocketPath checks that a directory too deep for a unix socket path is
// refused up front, not as an obscure bind error.
func TestDevicePluginSocketPath(t *testing.T) {
	base, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	for _, tc := range []struct {
		name    string
		dirLen  int // length of the plugin directory's path
		wantErr bool
	}{
		{name: "fits", dirLen: maxUnixSocketPath - len("/"+devicePluginSocket), wantErr: false},
		{name: "one byte over", dirLen: maxUnixSocketPath - len("/"+devicePluginSocket) + 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := base + "/" + strings.Repeat("d", tc.dirLen-len(base)-1)
			ctx, cancel := context.WithCancel(context.Background())
			done, err := runDevicePlugin(ctx, dir, string(ResourceGPU), []string{"GPU-0"}, &lockedLog{})
			cancel()
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "unix socket") {
					t.Fatalf("runDevicePlugin in a %d-byte directory: %v, want a socket path error", tc.dirLen, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			<-done
		})
	}
}
