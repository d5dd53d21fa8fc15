package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// A real DRA node's GPUs reach its kubelet through a DRA kubelet plugin, as on a GPU node
// with NVIDIA's DRA driver: the plugin registers with the kubelet (its plugins_registry
// directory), publishes the node's GPUs in a ResourceSlice pool (the very devices a kwok DRA
// pool's slices list, dra.go), and prepares the claims a scheduler allocated there when the
// kubelet starts a pod that uses them. Preparing a claim writes a CDI spec file for it and
// answers with the CDI device IDs of its devices; the kubelet passes those to containerd,
// which applies the spec's edits to the container. There is no driver, so the only edit is
// the one NVIDIA's runtime would make visible: NVIDIA_VISIBLE_DEVICES, the GPUs' UUIDs.
//
// CDI cannot merge one variable from several devices: each device's edits set it anew (the
// last applied wins). So every device of a request sets NVIDIA_VISIBLE_DEVICES to the UUIDs
// of all the devices allocated for that request, comma-joined, and whichever is applied last
// gives the container the request's whole list. A container using two requests, of one claim
// or of two, sees one request's GPUs only; a real node's pods ask one request for all their
// GPUs (Sluice's claims do).
const (
	// cdiKind is the CDI vendor and class of the devices the plugin's specs define:
	// <cdiKind>=<claim UID>-<device name> is a CDI device ID.
	cdiKind = "k8s." + DRADriver + "/claim"
	// draRegistrarSocket is the plugin's registration socket in the kubelet's
	// plugins_registry: shorter than the helper's <driver>-reg.sock, as the node's directory
	// is deep under the rig's and a unix socket's path has 107 bytes (the kubelet finds any
	// socket there, whatever its name).
	draRegistrarSocket = "dra-reg.sock"
)

// draKubeletPlugin is one real node's DRA kubelet plugin.
type draKubeletPlugin struct {
	node   string
	slices []resourceslice.Slice
	uuids  map[string]string // device name -> GPU UUID, whole GPUs only
	cdiDir string
	log    io.Writer

	helper *kubeletplugin.Helper

	mu        sync.Mutex
	published bool
	// prepared is what the plugin prepared and has not unprepared: claim UID -> its devices.
	prepared map[types.UID][]string
}

// draPluginDirs are where a node's plugin puts its sockets, as the kubelet knows them: its
// registration socket in the kubelet's plugins_registry, its DRA service socket in the
// kubelet's plugins/<driver>. Both are host paths; the kubelet's namespace sees them too
// (only /var/lib/kubelet is bound over in it, from the first of them).
func (n *realNode) draPluginDirs() (registrar, data string) {
	return n.path("kubelet", "plugins_registry"), n.path("kubelet", "plugins", DRADriver)
}

// cdiDir is where the node's DRA plugin writes CDI specs and its containerd reads them.
func (n *realNode) cdiDir() string { return n.path("cdi") }

// startDRAKubeletPlugin starts node n's plugin: it serves and registers with the kubelet at
// once, and publishes the node's devices once publish is called (the Node must exist).
// client reads the claims the kubelet asks about and writes the slices. ctx bounds only the
// start; stop ends the plugin.
func startDRAKubeletPlugin(ctx context.Context, client kubernetes.Interface, n *realNode, log io.Writer) (*draKubeletPlugin, error) {
	p := newDRAKubeletPlugin(n, log)
	registrar, data := n.draPluginDirs()
	socket := filepath.Join(registrar, draRegistrarSocket)
	for _, s := range []string{socket, filepath.Join(data, "dra.sock")} {
		if len(s) > maxUnixSocketPath {
			return nil, fmt.Errorf("DRA kubelet plugin: socket path %s is %d bytes, over the %d a unix socket allows: use a shorter rig directory", s, len(s), maxUnixSocketPath)
		}
	}
	for _, d := range []string{registrar, data, p.cdiDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("DRA kubelet plugin: %w", err)
		}
	}
	// The helper and its ResourceSlice controller log through klog's context logger: errors
	// go to the rig's log, the chatter (its gRPC calls, at verbosity 6) nowhere.
	logger := funcr.New(func(prefix, args string) {
		fmt.Fprintf(log, "DRA kubelet plugin %s: %s %s\n", n.name, prefix, args)
	}, funcr.Options{Verbosity: 0})
	helper, err := kubeletplugin.Start(klog.NewContext(context.WithoutCancel(ctx), logger), p,
		kubeletplugin.DriverName(DRADriver),
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(n.name),
		kubeletplugin.RegistrarDirectoryPath(registrar),
		kubeletplugin.RegistrarSocketFilename(draRegistrarSocket),
		kubeletplugin.PluginDataDirectoryPath(data),
		kubeletplugin.HealthService(false), // stand-in GPUs are always healthy
	)
	if err != nil {
		return nil, fmt.Errorf("DRA kubelet plugin on %s: %w", n.name, err)
	}
	p.helper = helper
	return p, nil
}

// newDRAKubeletPlugin is node n's plugin, not started: the node's slices as dra.go builds
// them, and the UUID of each whole GPU.
func newDRAKubeletPlugin(n *realNode, log io.Writer) *draKubeletPlugin {
	p := &draKubeletPlugin{node: n.name, cdiDir: n.cdiDir(), uuids: map[string]string{}, log: log, prepared: map[types.UID][]string{}}
	for _, s := range n.pool.resourceSlices(n.poolIndex) {
		p.slices = append(p.slices, resourceslice.Slice{Devices: s.Spec.Devices, SharedCounters: s.Spec.SharedCounters})
		for _, d := range s.Spec.Devices {
			if uuid := d.Attributes[DRAAttrUUID].StringValue; uuid != nil {
				p.uuids[d.Name] = *uuid
			}
		}
	}
	return p
}

// publish publishes the node's slices, the first time it is called, once the Node exists:
// it owns them, as a driver's are owned, so deleting it takes them along.
func (p *draKubeletPlugin) publish(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.published {
		return nil
	}
	pool := resourceslice.Pool{Slices: p.slices}
	if err := p.helper.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{p.node: pool}}); err != nil {
		return fmt.Errorf("DRA kubelet plugin on %s: %w", p.node, err)
	}
	p.published = true
	return nil
}

// registered says whether the kubelet has taken the plugin on.
func (p *draKubeletPlugin) registered() bool {
	s := p.helper.RegistrationStatus()
	return s != nil && s.PluginRegistered
}

// stop stops serving and publishing; what was published stays, as when a driver restarts.
func (p *draKubeletPlugin) stop() { p.helper.Stop() }

// cdiSpecPath is the spec file of a claim.
func (p *draKubeletPlugin) cdiSpecPath(claim types.UID) string {
	return filepath.Join(p.cdiDir, DRADriver+"-"+string(claim)+".json")
}

// PrepareResourceClaims writes each claim's CDI spec and answers with its devices' CDI IDs.
func (p *draKubeletPlugin) PrepareResourceClaims(_ context.Context, claims []*resourcev1.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		devices, err := p.prepare(c)
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return out, nil
}

// prepare prepares one claim: again, for a claim prepared already (the kubelet may ask twice).
func (p *draKubeletPlugin) prepare(c *resourcev1.ResourceClaim) ([]kubeletplugin.Device, error) {
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)
	}
	// The allocation's devices of this driver on this node, and the UUIDs of each request's.
	var results []resourcev1.DeviceRequestAllocationResult
	byRequest := map[string][]string{}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DRADriver || r.Pool != p.node {
			continue
		}
		uuid, ok := p.uuids[r.Device]
		if !ok {
			return nil, fmt.Errorf("claim %s/%s: device %s of %s is not a whole GPU; the stand-in prepares whole GPUs only", c.Namespace, c.Name, r.Device, p.node)
		}
		for other, held := range p.prepared {
			if other != c.UID && slices.Contains(held, r.Device) {
				return nil, fmt.Errorf("claim %s/%s: device %s is prepared for claim %s already", c.Namespace, c.Name, r.Device, other)
			}
		}
		results = append(results, r)
		byRequest[r.Request] = append(byRequest[r.Request], uuid)
	}
	spec := cdispec.Spec{Kind: cdiKind}
	var devices []kubeletplugin.Device
	var names []string
	for _, r := range results {
		name := string(c.UID) + "-" + r.Device
		spec.Devices = append(spec.Devices, cdispec.Device{Name: name, ContainerEdits: cdispec.ContainerEdits{
			Env: []string{visibleDevicesEnv + "=" + strings.Join(byRequest[r.Request], ",")},
		}})
		devices = append(devices, kubeletplugin.Device{
			Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
			CDIDeviceIDs: []string{cdiKind + "=" + name},
		})
		names = append(names, r.Device)
	}
	if len(results) > 0 {
		// The oldest version that has what the spec uses, so any runtime's CDI reads it.
		v, err := cdispec.MinimumRequiredVersion(&spec)
		if err != nil {
			return nil, fmt.Errorf("claim %s/%s: CDI spec: %w", c.Namespace, c.Name, err)
		}
		spec.Version = v
		if err := writeJSONAtomically(p.cdiSpecPath(c.UID), spec); err != nil {
			return nil, fmt.Errorf("claim %s/%s: CDI spec: %w", c.Namespace, c.Name, err)
		}
	}
	p.prepared[c.UID] = names
	fmt.Fprintf(p.log, "DRA kubelet plugin %s: prepared claim %s/%s: %v\n", p.node, c.Namespace, c.Name, names)
	return devices, nil
}

// writeJSONAtomically writes v as JSON to path through a temporary file that the CDI
// registry's directory watch skips (it reads only .json and .yaml files), so containerd
// never reads half a spec.
func writeJSONAtomically(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// UnprepareResourceClaims removes each claim's CDI spec; a claim not prepared is no error.
func (p *draKubeletPlugin) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := os.Remove(p.cdiSpecPath(c.UID))
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err == nil {
			delete(p.prepared, c.UID)
			fmt.Fprintf(p.log, "DRA kubelet plugin %s: unprepared claim %s\n", p.node, c.String())
		}
		out[c.UID] = err
	}
	return out, nil
}

// HandleError logs what went wrong in the background (publishing slices, serving): every
// such error is worth retrying for the rig, which a plugin exiting would not do better.
func (p *draKubeletPlugin) HandleError(_ context.Context, err error, msg string) {
	fmt.Fprintf(p.log, "DRA kubelet plugin %s: %s: %v\n", p.node, msg, err)
}

// WatchHealthStatus is not called: the plugin starts with the health service off.
func (p *draKubeletPlugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// preparedClaims are the claims the plugin holds prepared, sorted, for tests.
func (p *draKubeletPlugin) preparedClaims() []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.prepared))
}

// RuntimeHasCDI says whether node's container runtime, as its kubelet reports it, applies
// the CDI devices the kubelet passes on: containerd does from 1.7 (with enable_cdi, which
// the real nodes' configuration sets). Where it does not, a DRA plugin's claims are
// prepared and their pods run, but the devices' edits (NVIDIA_VISIBLE_DEVICES) are lost.
func RuntimeHasCDI(node *corev1.Node) bool {
	v, ok := strings.CutPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://")
	if !ok {
		return false
	}
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major > 1 || major == 1 && minor >= 7)
}
