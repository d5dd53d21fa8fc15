package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A real node is one whose pods really run: a kubelet (built from the same Kubernetes
// release as the rest of the rig) and Debian's containerd and runc on this machine, with
// the containernetworking bridge plugin for the pod network. Several real nodes share the
// machine, so each gets what a kubelet and a runtime assume is theirs alone:
//
//   - a mount namespace of its own, in which its directory is bind-mounted over
//     /var/lib/kubelet (the kubelet's device-plugin socket and checkpoint live at that
//     fixed path whatever its --root-dir), /var/lib/cni, /run/containerd and /run/netns.
//     containerd, its shims and the kubelet all run in it, so the volumes the kubelet
//     mounts are the ones containerd sees, and every mount goes with the namespace when
//     the node's processes end;
//   - a bridge of its own (sluicebrN, 10.88.N.0/24, the node's InternalIP 10.88.N.1);
//     the host routes between the bridges, so a pod on one node reaches a pod on another
//     by its pod IP across two veths and two bridges, as across a routed pod network;
//   - a cgroup root of its own (/sluice-real-N) under the cgroup v1 hierarchies this
//     machine has, which the kubelet's pods live under and Stop empties and removes.
//
// What a real node does not have: a separate kernel, network stack or hostname. All
// kubelets see the same CPUs and memory, and `hostname` in a pod prints the pod's name
// (as on any Kubernetes node), not the node's.

// realSubnetPrefix is the /16 the real nodes' pod networks come from: node N has
// 10.88.N.0/24. Apart from podCIDR, which kwok's simulated pods use.
const realSubnetPrefix = "10.88."

// realNodeLock keeps two rigs with real nodes off one machine at a time: bridge names,
// subnets and cgroup roots are machine-wide.
const realNodeLock = "/run/sluice-real-nodes.lock"

// cniBinDir is where Debian's containernetworking-plugins installs the plugins.
const cniBinDir = "/usr/lib/cni"

// realNode is one running real node.
type realNode struct {
	name      string
	index     int // N in sluicebrN, 10.88.N.0/24 and /sluice-real-N
	pool      NodePool
	poolIndex int // i in NodeName(pool.Name, i)
	dir       string
	// kubeletPort serves the kubelet API (logs, exec, attach) to the API server;
	// healthzPort its /healthz on loopback.
	kubeletPort, healthzPort int
	containerd, kubelet      *component
	// stopPlugin ends the node's device plugin; pluginDone closes when it has.
	stopPlugin context.CancelFunc
	pluginDone <-chan struct{}
	// dra is a DRA pool's node's DRA kubelet plugin, which serves its GPUs instead of the
	// device plugin (drakubeletplugin.go).
	dra *draKubeletPlugin
}

func (n *realNode) bridge() string { return "sluicebr" + strconv.Itoa(n.index) }
func (n *realNode) ip() string     { return realSubnetPrefix + strconv.Itoa(n.index) + ".1" }
func (n *realNode) subnet() string { return realSubnetPrefix + strconv.Itoa(n.index) + ".0/24" }
func (n *realNode) cgroupRoot() string {
	return "/sluice-real-" + strconv.Itoa(n.index)
}
func (n *realNode) path(parts ...string) string {
	return filepath.Join(append([]string{n.dir}, parts...)...)
}
func (n *realNode) socket() string { return n.path("containerd.sock") }

// realNodeRequirements says what a machine lacks to run real nodes, all of it at once.
func realNodeRequirements(assets string) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (real nodes make mount namespaces, bridges and cgroups): run as root")
	}
	debian := []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "unshare", "nsenter", "ip", "iptables"}
	for _, b := range debian {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b+" (not on PATH)")
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			missing = append(missing, "CNI plugin "+filepath.Join(cniBinDir, p))
		}
	}
	for _, b := range []string{"kubelet", "coredns"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			missing = append(missing, filepath.Join(assets, b)+" (make rig-tools builds it)")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("real nodes need what this machine lacks:\n  %s\n"+
		"Debian's packages: apt-get install containerd runc containernetworking-plugins iproute2 iptables util-linux (hack/test-deps.sh installs them)",
		strings.Join(missing, "\n  "))
}

// lockRealNodes takes the machine-wide lock; the returned file holds it until closed.
func lockRealNodes() (*os.File, error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another rig with real nodes runs on this machine (it holds %s); stop it first", realNodeLock)
	}
	return f, nil
}

// prepareHost does what every real node needs of the host, once: forwarding between
// the bridges and the mount points the node namespaces bind over.
func prepareHost() error {
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enable IP forwarding between the real nodes' bridges: %w", err)
	}
	for _, d := range []string{"/var/lib/kubelet", "/var/lib/cni", "/run/containerd", "/run/netns"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// setUpBridge creates the node's bridge with its address, as the bridge plugin would on
// the first pod, so the kubelet has its node IP to listen on before any pod runs.
func (n *realNode) setUpBridge() error {
	_ = exec.Command("ip", "link", "del", n.bridge()).Run() // a crashed run's
	for _, args := range [][]string{
		{"link", "add", n.bridge(), "type", "bridge"},
		{"addr", "add", n.ip() + "/24", "dev", n.bridge()},
		{"link", "set", n.bridge(), "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// writeConfigs writes containerd's, the CNI's and the kubelet's configuration.
func (n *realNode) writeConfigs(l layout, caFile string) error {
	for _, d := range []string{n.path("containerd"), n.path("kubelet"), n.path("cni", "net.d"), n.path("cni", "state"), n.path("pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		n.path("containerd.toml"):                    n.containerdConfig(),
		n.path("cni", "net.d", "10-sluice.conflist"): n.cniConfig(),
		n.path("kubelet.yaml"):                       n.kubeletConfig(caFile),
	}
	for path, data := range files {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig runs the CRI plugin with runc and cgroupfs (the kubelet's driver
// here: no systemd), the rig's own pause image (nothing can be pulled), the node's
// CNI configuration, and CDI with the node's own spec directory, where its DRA kubelet
// plugin writes the specs of the claims it prepares (containerd 1.7 and later read
// enable_cdi and cdi_spec_dirs; containerd 1.6, Debian 12's, has no CDI and ignores them,
// so a prepared claim's devices do not reach its containers there).
// restrict_oom_score_adj keeps containers' OOM score adjustments at or above
// containerd's own: this machine's root lacks CAP_SYS_RESOURCE, so the pod
// sandbox's -998 (and a Guaranteed pod's -997) fail in runc with "failed to update
// /proc/self/oom_score_adj: Permission denied", and every pod would stay
// ContainerCreating. A node with that capability never needs it.
func (n *realNode) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %q
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  enable_unprivileged_ports = true
  restrict_oom_score_adj = true
  enable_cdi = true
  cdi_spec_dirs = [%q]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, n.path("containerd"), n.socket(), PauseImage, n.cdiDir(), cniBinDir, n.path("cni", "net.d"))
}

// cniConfig is a bridge network on the node's bridge with host-local addresses from the
// node's /24, routed (no masquerade) so pod IPs are what other pods see.
func (n *realNode) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "sluice-rig",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    }
  ]
}
`, n.bridge(), n.subnet(), n.ip(), n.path("cni", "state"))
}

// kubeletConfig: cgroup v1 allowed (this machine has no unified hierarchy with
// controllers), a cgroup root per node, x509 client certificates from the rig's CA and
// webhook authorization (the API server authenticates with its kubelet client
// certificate), the node's own resolver for pods (CoreDNS on the node's bridge address),
// and nothing that would evict pods or collect the imported images on a busy disk.
func (n *realNode) kubeletConfig(caFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: %q
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
tlsCertFile: %q
tlsPrivateKeyFile: %q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
clusterDomain: cluster.local
clusterDNS: [%q]
resolvConf: ""
podLogsDir: %q
evictionHard: {memory.available: "1Mi", nodefs.available: "0%%", imagefs.available: "0%%", nodefs.inodesFree: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imageMinimumGCAge: 87600h
serializeImagePulls: false
maxPods: 110
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusReportFrequency: 10s
`, n.cgroupRoot(), n.socket(), n.ip(), n.kubeletPort, n.healthzPort,
		n.path("serving.crt"), n.path("serving.key"), caFile, n.ip(), n.path("pod-logs"))
}

// kubeletArgs: the node's name, address and labels (what the simulated nodes get from
// createNodes), its kubeconfig as system:node:NAME.
func (n *realNode) kubeletArgs(l layout) []string {
	labels := []string{LabelPartition + "=" + n.pool.Name}
	if n.pool.GPUsPerNode > 0 {
		labels = append(labels,
			LabelGPUProduct+"="+n.pool.GPUModel,
			LabelGPUMemory+"="+strconv.Itoa(n.pool.GPUMemoryMiB),
			LabelGPUCount+"="+strconv.Itoa(n.pool.GPUsPerNode),
			LabelMIGStrategy+"="+n.pool.migStrategy())
	}
	for k, v := range n.pool.Labels {
		labels = append(labels, k+"="+v)
	}
	return []string{
		"--config=" + n.path("kubelet.yaml"),
		"--kubeconfig=" + l.kubeconfig("node-"+n.name),
		"--root-dir=/var/lib/kubelet",
		"--hostname-override=" + n.name,
		"--node-ip=" + n.ip(),
		"--node-labels=" + strings.Join(labels, ","),
		"--v=1",
	}
}

// startRealNode brings one node up: bridge, configs, containerd in a new mount
// namespace, the images, the kubelet in the same namespace, then the device plugin or,
// on a DRA pool's node, the DRA kubelet plugin (never both: the GPUs are one's or the
// other's).
// It returns once the kubelet answers /healthz; the node's Ready is waited for with
// the others.
func (c *Cluster) startRealNode(ctx context.Context, n *realNode, keys *pki) error {
	if err := n.setUpBridge(); err != nil {
		return err
	}
	if err := n.writeConfigs(c.layout, keys.files.CACert); err != nil {
		return err
	}
	serving, err := keys.ca.issue("system:node:"+n.name, []string{"system:nodes"}, []string{n.ip(), "127.0.0.1", n.name})
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.path("serving.crt"), serving.CertPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(n.path("serving.key"), serving.KeyPEM, 0o600); err != nil {
		return err
	}
	client, err := keys.ca.issue("system:node:"+n.name, []string{"system:nodes"}, nil)
	if err != nil {
		return err
	}
	if err := writeKubeconfig(c.layout.kubeconfig("node-"+n.name), c.URL, keys.ca.certPEM, credential{User: "system:node:" + n.name, Groups: []string{"system:nodes"}, keyPair: client}); err != nil {
		return err
	}

	// The namespace's first process binds the node's directories over the fixed paths,
	// privately (nothing propagates to the host), then becomes containerd.
	setup := strings.Join([]string{
		"set -e",
		"mount --make-rprivate /",
		fmt.Sprintf("mount --bind %q /var/lib/kubelet", n.path("kubelet")),
		fmt.Sprintf("mount --bind %q /var/lib/cni", n.path("cni", "state")),
		"mount -t tmpfs -o mode=0711 tmpfs /run/containerd",
		"mount -t tmpfs -o mode=0755 tmpfs /run/netns",
		fmt.Sprintf("exec containerd --config %q", n.path("containerd.toml")),
	}, "\n")
	n.containerd, err = c.run(n.name+"-containerd", "unshare", []string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", setup}, nil)
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, n.containerd, n.name+" containerd serving", func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", n.socket(), "version").Run()
	}); err != nil {
		return err
	}
	if err := c.images.importInto(ctx, n.socket()); err != nil {
		return n.containerd.failure(err)
	}
	if err := makeCgroupRoot(n.cgroupRoot()); err != nil {
		return err
	}
	ns := "/proc/" + strconv.Itoa(n.containerd.pid()) + "/ns/mnt"
	kubelet := filepath.Join(c.assets, "kubelet")
	n.kubelet, err = c.run(n.name+"-kubelet", "nsenter", append([]string{"--mount=" + ns, "--", kubelet}, n.kubeletArgs(c.layout)...), nil)
	if err != nil {
		return err
	}
	healthz := "http://127.0.0.1:" + strconv.Itoa(n.healthzPort) + "/healthz"
	if err := c.waitFor(ctx, n.kubelet, n.name+" kubelet healthy", func(ctx context.Context) error {
		return httpGetOK(ctx, httpPlain, healthz)
	}); err != nil {
		return err
	}
	if n.pool.DRA {
		n.dra, err = startDRAKubeletPlugin(ctx, c.client, n, c.log)
		return err
	}
	if n.pool.GPUsPerNode > 0 {
		ids := make([]string, n.pool.GPUsPerNode)
		for i := range ids {
			ids[i] = GPUUUID(n.name, i)
		}
		pctx, stop := context.WithCancel(context.Background())
		done, err := runDevicePlugin(pctx, n.path("kubelet", "device-plugins"), string(ResourceGPU), ids, c.log)
		if err != nil {
			stop()
			return err
		}
		n.stopPlugin, n.pluginDone = stop, done
	}
	return nil
}

// httpPlain is a client for loopback health checks over plain HTTP.
var httpPlain = &http.Client{Timeout: 5 * time.Second}

// annotateRealNode gives a registered real node what createNodes gives a simulated
// one and a kubelet does not: the per-GPU annotation, with the UUIDs the node's device
// plugin hands out. A DRA node has none (as a kwok DRA node): its plugin publishes its
// GPUs instead, now that the Node that owns them exists.
func (c *Cluster) annotateRealNode(ctx context.Context, n *realNode) error {
	if n.dra != nil {
		return n.dra.publish(ctx)
	}
	if n.pool.GPUsPerNode == 0 {
		return nil
	}
	gpus, err := n.pool.gpuAnnotation(n.name)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationGPUs, gpus)
	_, err = c.client.CoreV1().Nodes().Patch(ctx, n.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// stop ends the node: the device plugin or the DRA plugin, the kubelet, every container
// (by the node's cgroups: a container's processes are not in any component's process
// group), the shims, containerd; then the bridge and the cgroups. The mounts go with the
// namespace.
func (n *realNode) stop() {
	if n.stopPlugin != nil {
		n.stopPlugin()
		<-n.pluginDone
	}
	if n.dra != nil {
		n.dra.stop()
	}
	if n.kubelet != nil {
		n.kubelet.stop(stopGrace)
	}
	killCgroupTree(n.cgroupRoot())
	if n.containerd != nil {
		n.containerd.stop(stopGrace)
	}
	for _, pid := range processesMentioning(n.socket()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	killCgroupTree(n.cgroupRoot())
	_ = exec.Command("ip", "link", "del", n.bridge()).Run()
	removeCgroupTree(n.cgroupRoot())
}

// cgroupHierarchies are the cgroup v1 mounts the kubelet makes pod cgroups in.
func cgroupHierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return append(out, "/sys/fs/cgroup/unified")
}

// makeCgroupRoot creates root in every cgroup v1 hierarchy, as a kubelet expects of
// its cgroupRoot; a new cpuset cgroup has no CPUs or memory nodes until given its
// parent's.
func makeCgroupRoot(root string) error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup root %s: %w", dir, err)
		}
		if filepath.Base(h) != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return fmt.Errorf("cgroup root %s: %w", dir, err)
			}
		}
	}
	return nil
}

// killCgroupTree SIGKILLs every process in root's cgroups, in every hierarchy, until
// none is left or a few seconds pass.
func killCgroupTree(root string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		found := false
		for _, h := range cgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						found = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !found {
			return
		}
	}
}

// removeCgroupTree removes root's cgroups, deepest first.
func removeCgroupTree(root string) {
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// realNodeLeftovers names what a stopped real node left: its bridge or cgroups.
func (n *realNode) leftovers() []string {
	var left []string
	if _, err := net.InterfaceByName(n.bridge()); err == nil {
		left = append(left, "bridge "+n.bridge())
	}
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, n.cgroupRoot())); err == nil {
			left = append(left, "cgroup "+filepath.Join(h, n.cgroupRoot()))
		}
	}
	return left
}

var errNoRealNodes = errors.New("the rig has no real nodes")
