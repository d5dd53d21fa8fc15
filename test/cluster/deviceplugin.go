package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// A real node's GPUs reach the kubelet through a device plugin, as on a GPU node with
// NVIDIA's plugin: the kubelet's device manager, not Sluice or the rig, chooses which
// device IDs a pod gets. The stand-in below speaks the kubelet's real device-plugin API
// and answers Allocate the way NVIDIA's plugin does with its envvar strategy. There is no
// driver, so it hands out no device nodes, only NVIDIA_VISIBLE_DEVICES.
const (
	devicePluginSocket        = "sluice-gpu.sock"
	kubeletRegistrationSocket = "kubelet.sock"
	visibleDevicesEnv         = "NVIDIA_VISIBLE_DEVICES"
	// maxUnixSocketPath is what fits in sockaddr_un's 108-byte sun_path with its NUL.
	maxUnixSocketPath = 107
	// pluginRegisterPoll is how often registration is retried while the kubelet is not up;
	// pluginRestartPoll how often kubelet.sock is checked for a restarted kubelet.
	pluginRegisterPoll = 200 * time.Millisecond
	pluginRestartPoll  = time.Second
	// pluginRegisterTimeout bounds one Register call: the kubelet dials the plugin back
	// and asks for its options before it answers.
	pluginRegisterTimeout = 10 * time.Second
	// pluginStopGrace bounds the graceful stop; then open calls are cut.
	pluginStopGrace = 2 * time.Second
)

// devicePlugin serves one node's GPUs as resource nvidia.com/gpu.
type devicePlugin struct {
	pluginapi.UnimplementedDevicePluginServer

	dir, socket, kubelet string // plugin directory and the two sockets in it
	resource             string
	devices              []*pluginapi.Device
	known                map[string]bool
	log                  io.Writer

	srv *grpc.Server
	lis *net.UnixListener
	// own is the socket file lis made: when the kubelet starts it deletes every
	// socket in its directory, and the plugin must listen afresh to be dialable.
	own os.FileInfo
	// stopping closes when ctx ends, so ListAndWatch streams return before the
	// server's graceful stop waits for them.
	stopping <-chan struct{}
	// streamEnded says a ListAndWatch stream ended: often the kubelet going away,
	// so kubelet.sock is checked at once rather than at the next poll.
	streamEnded chan struct{}
}

// runDevicePlugin serves deviceIDs (the node's GPU UUIDs, as its annotation lists them) as
// resourceName on pluginDir/sluice-gpu.sock, pluginDir being the host path of a kubelet's
// device-plugin directory, and registers with the kubelet there: when it comes up and each
// time it restarts. It logs one line per registration to log. It stops when ctx ends, and
// done closes once it has stopped and removed its socket. An error means nothing started.
func runDevicePlugin(ctx context.Context, pluginDir, resourceName string, deviceIDs []string, log io.Writer) (done <-chan struct{}, err error) {
	dir, err := filepath.Abs(pluginDir)
	if err != nil {
		return nil, err
	}
	p := &devicePlugin{
		dir:         dir,
		socket:      filepath.Join(dir, devicePluginSocket),
		kubelet:     filepath.Join(dir, kubeletRegistrationSocket),
		resource:    resourceName,
		known:       map[string]bool{},
		log:         log,
		stopping:    ctx.Done(),
		streamEnded: make(chan struct{}, 1),
	}
	for _, s := range []string{p.socket, p.kubelet} {
		if len(s) > maxUnixSocketPath {
			return nil, fmt.Errorf("device plugin: socket path %s is %d bytes, over the %d a unix socket allows: use a shorter node directory", s, len(s), maxUnixSocketPath)
		}
	}
	for _, id := range deviceIDs {
		p.devices = append(p.devices, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
		p.known[id] = true
	}
	// The kubelet makes the directory too; making it here lets the plugin start first.
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("device plugin: %w", err)
	}
	p.srv = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(p.srv, p)
	if err := p.listen(); err != nil {
		return nil, err
	}
	d := make(chan struct{})
	go func() {
		defer close(d)
		p.run(ctx)
		p.stop()
	}()
	return d, nil
}

// listen (re)creates the plugin's socket, replacing a stale one or one of its own that
// the kubelet deleted, and serves it.
func (p *devicePlugin) listen() error {
	if p.lis != nil {
		// Close without unlinking: the path is gone or no longer this listener's.
		p.lis.SetUnlinkOnClose(false)
		_ = p.lis.Close()
		p.lis, p.own = nil, nil
	}
	if err := os.Remove(p.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("device plugin: removing stale socket: %w", err)
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.socket, Net: "unix"})
	if err != nil {
		return fmt.Errorf("device plugin: %w", err)
	}
	lis.SetUnlinkOnClose(false) // stop removes the file only while it is still this one
	own, err := os.Stat(p.socket)
	if err != nil {
		_ = lis.Close()
		return fmt.Errorf("device plugin: %w", err)
	}
	p.lis, p.own = lis, own
	go func() { _ = p.srv.Serve(lis) }() // returns when lis closes
	return nil
}

// run registers with the kubelet, and again whenever kubelet.sock is a new file (a
// restarted kubelet forgets its plugins) or the plugin's own socket was deleted, until
// ctx ends.
func (p *devicePlugin) run(ctx context.Context) {
	var registered os.FileInfo // kubelet.sock as it was at the last registration
	lastErr := ""
	for {
		kfi, kerr := os.Stat(p.kubelet)
		if kerr != nil {
			registered = nil // no kubelet: register with the next one
		}
		if kerr == nil && (registered == nil || !sameSocketFile(kfi, registered) || !p.socketIsOwn()) {
			err := p.ensureListening()
			if err == nil {
				err = p.register(ctx)
			}
			if err == nil {
				registered, lastErr = kfi, ""
				fmt.Fprintf(p.log, "device plugin: registered %d %s with the kubelet at %s\n", len(p.devices), p.resource, p.kubelet)
			} else if ctx.Err() == nil && status.Code(err) != codes.Unavailable && err.Error() != lastErr {
				// Unavailable is a kubelet not up yet; anything else is worth a line, once.
				lastErr = err.Error()
				fmt.Fprintf(p.log, "device plugin: registering with the kubelet at %s: %v (retrying)\n", p.kubelet, err)
			}
		}
		wait := pluginRestartPoll
		if registered == nil {
			wait = pluginRegisterPoll
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.streamEnded:
			t.Stop()
		case <-t.C:
		}
	}
}

// sameSocketFile says whether two stats are of the same socket file. The modification time
// is compared too, as a recreated file may get the inode number of the one it replaced.
func sameSocketFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime())
}

// socketIsOwn says whether the plugin's socket path is still the file its listener made.
func (p *devicePlugin) socketIsOwn() bool {
	fi, err := os.Stat(p.socket)
	return err == nil && p.own != nil && sameSocketFile(fi, p.own)
}

// ensureListening listens afresh if the plugin's socket is gone: a starting kubelet
// deletes the sockets in its directory.
func (p *devicePlugin) ensureListening() error {
	if p.socketIsOwn() {
		return nil
	}
	return p.listen()
}

// register makes one Register call to the kubelet.
func (p *devicePlugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+p.kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, pluginRegisterTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     devicePluginSocket,
		ResourceName: p.resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	return err
}

// stop stops serving, cutting calls still open after pluginStopGrace, and removes the socket
// if it is still the plugin's.
func (p *devicePlugin) stop() {
	stopped := make(chan struct{})
	go func() {
		p.srv.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(pluginStopGrace)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		p.srv.Stop()
		<-stopped
	}
	if p.socketIsOwn() {
		_ = os.Remove(p.socket)
	}
}

// GetDevicePluginOptions: no PreStartContainer call and no preferred allocation; the
// kubelet's device manager picks devices on its own.
func (p *devicePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch lists every device, healthy, once: there is nothing to watch, the
// devices never change. It returns when the plugin stops or the kubelet hangs up.
func (p *devicePlugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	select {
	case <-p.stopping:
	case <-stream.Context().Done():
		select {
		case p.streamEnded <- struct{}{}:
		default: // a check is already due
		}
	}
	return nil
}

// Allocate gives each container the devices the kubelet chose for it, as NVIDIA's plugin
// does with its envvar strategy: NVIDIA_VISIBLE_DEVICES lists them, and nothing else.
func (p *devicePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		for _, id := range c.DevicesIds {
			if !p.known[id] {
				return nil, status.Errorf(codes.InvalidArgument, "unknown %s device %q", p.resource, id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{visibleDevicesEnv: strings.Join(c.DevicesIds, ",")},
		})
	}
	return resp, nil
}

// GetPreferredAllocation is never called (the options say so); it prefers nothing.
func (p *devicePlugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// PreStartContainer is never called (the options say so); there is nothing to prepare.
func (p *devicePlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
