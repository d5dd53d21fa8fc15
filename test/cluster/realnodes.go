package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startRealNodes starts the spec's real nodes (none: nothing to do) and the cluster
// DNS their pods use. Their kubelets register the Node objects; waitNodesReady waits
// for them with the simulated ones.
func (c *Cluster) startRealNodes(ctx context.Context, keys *pki) error {
	if c.spec.RealNodeCount() == 0 {
		return nil
	}
	began := time.Now()
	if err := realNodeRequirements(c.assets); err != nil {
		return err
	}
	lock, err := lockRealNodes()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.realLock = lock
	c.mu.Unlock()
	if err := prepareHost(); err != nil {
		return err
	}
	ports, err := freePorts(2*c.spec.RealNodeCount() + 1)
	if err != nil {
		return err
	}
	index := 0
	for _, p := range c.spec.NodePools {
		if !p.Real {
			continue
		}
		for i := range p.Count {
			name := NodeName(p.Name, i)
			n := &realNode{name: name, index: index, pool: p, poolIndex: i, dir: c.layout.path("nodes", name),
				kubeletPort: ports[2*index], healthzPort: ports[2*index+1]}
			c.mu.Lock()
			c.realNodes = append(c.realNodes, n)
			c.mu.Unlock()
			index++
		}
	}
	c.images = &imageSet{dir: c.layout.path("images")}
	if err := c.images.buildBase(c.log); err != nil {
		return err
	}
	if c.sluiceBinary != "" {
		if err := c.images.buildSluice(c.sluiceBinary); err != nil {
			return err
		}
	}
	for _, n := range c.realNodes {
		if err := c.startRealNode(ctx, n, keys); err != nil {
			return err
		}
	}
	if err := c.startClusterDNS(ctx, c.realNodes, ports[len(ports)-1]); err != nil {
		return err
	}
	if err := c.forwardKubernetesService(true); err != nil {
		return err
	}
	c.progress("%d real nodes up in %s (kubelet and containerd each; images %s)", len(c.realNodes), time.Since(began).Round(time.Millisecond), c.images.dir)
	return nil
}

// LoadSluiceImage builds SluiceImage from the sluice binary at path and imports it into
// every real node's runtime. A rig started without Options.SluiceBinary needs it before
// a Slurm job runs there.
func (c *Cluster) LoadSluiceImage(ctx context.Context, binary string) error {
	c.mu.Lock()
	nodes, images := c.realNodes, c.images
	c.mu.Unlock()
	if len(nodes) == 0 {
		return errNoRealNodes
	}
	if err := images.buildSluice(binary); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := images.importOne(ctx, n.socket(), images.sluice); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
	}
	return nil
}

// forwardKubernetesService adds (or deletes) the one rule of kube-proxy's work the real
// nodes need, as the rig runs no kube-proxy: the kubernetes Service's address, which
// the kubelet gives every pod as KUBERNETES_SERVICE_HOST, leads to the API server on the
// first node's address. In-cluster clients in pods (a GPU reservation pod reporting its
// device) reach the API server through it and check its certificate for 10.96.0.1.
func (c *Cluster) forwardKubernetesService(add bool) error {
	op := "-A"
	if !add {
		op = "-D"
	}
	_, err := c.iptablesForward(op)
	return err
}

// iptablesForward runs iptables with op (-A, -D, -C) on the kubernetes Service's rule.
func (c *Cluster) iptablesForward(op string) ([]byte, error) {
	args := []string{"-t", "nat", op, "PREROUTING", "-d", kubernetesService + "/32", "-p", "tcp", "--dport", "443",
		"-m", "comment", "--comment", "sluice rig: kubernetes Service", "-j", "DNAT",
		"--to-destination", c.realNodes[0].ip() + ":" + strconv.Itoa(c.layout.apiServer)}
	out, err := exec.Command("iptables", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// RealNodes are the names of the rig's real nodes.
func (c *Cluster) RealNodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, n := range c.realNodes {
		names = append(names, n.name)
	}
	return names
}

// annotateRealNodes annotates the real nodes among nodes that lack their GPU annotation,
// and has the DRA ones' plugins publish their GPUs.
func (c *Cluster) annotateRealNodes(ctx context.Context, nodes []corev1.Node) error {
	for _, n := range c.realNodes {
		for i := range nodes {
			if nodes[i].Name == n.name && (n.dra != nil || nodes[i].Annotations[AnnotationGPUs] == "") {
				if err := c.annotateRealNode(ctx, n); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// stopRealNodes stops every real node, last started first, and releases the lock.
func (c *Cluster) stopRealNodes() {
	c.mu.Lock()
	nodes, lock := c.realNodes, c.realLock
	c.mu.Unlock()
	for i := len(nodes) - 1; i >= 0; i-- {
		nodes[i].stop()
	}
	if len(nodes) > 0 {
		_ = c.forwardKubernetesService(false)
	}
	if lock != nil {
		lock.Close()
	}
}

// Images the rig's real nodes hold, imported from archives built on this machine:
// nothing is pulled (imagePullPolicy IfNotPresent finds them; Always would fail).
const (
	// JobImage is a small Debian userland (bash, coreutils, procps, python3 where the
	// machine has it) made from this machine's installed Debian packages.
	JobImage = "sluice.local/job:rig"
	// SluiceImage holds the sluice binary at /sluice, as the project's Dockerfile
	// builds it: the launcher image of job pods, and the GPU reservation pods' image.
	SluiceImage = "sluice.local/sluice:rig"
	// PauseImage is the pod sandbox image containerd runs (busybox-static sleeping).
	PauseImage = "sluice.local/pause:rig"
)

// imageSet is the archives of the rig's images, built once per rig.
type imageSet struct {
	dir                string
	job, pause, sluice string // archive paths
}

func (s *imageSet) buildBase(log interface{ Write([]byte) (int, error) }) error {
	began := time.Now()
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	files, cfg, err := jobImage()
	if err != nil {
		return err
	}
	s.job = filepath.Join(s.dir, "job.tar")
	if err := buildImageArchive(s.job, JobImage, files, cfg); err != nil {
		return err
	}
	files, cfg, err = pauseImage()
	if err != nil {
		return err
	}
	s.pause = filepath.Join(s.dir, "pause.tar")
	if err := buildImageArchive(s.pause, PauseImage, files, cfg); err != nil {
		return err
	}
	fmt.Fprintf(log, "rig: images %s and %s built in %s\n", JobImage, PauseImage, time.Since(began).Round(time.Millisecond))
	return nil
}

func (s *imageSet) buildSluice(binary string) error {
	files, cfg, err := sluiceImage(binary)
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, "sluice.tar")
	if err := buildImageArchive(path, SluiceImage, files, cfg); err != nil {
		return err
	}
	s.sluice = path
	return nil
}

// importInto imports every built archive into the containerd at socket.
func (s *imageSet) importInto(ctx context.Context, socket string) error {
	for _, a := range []string{s.pause, s.job, s.sluice} {
		if a == "" {
			continue
		}
		if err := s.importOne(ctx, socket, a); err != nil {
			return err
		}
	}
	return nil
}

// importOne imports one archive into the CRI's namespace (k8s.io), unpacked for the
// overlayfs snapshotter the CRI uses.
func (s *imageSet) importOne(ctx context.Context, socket, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "--namespace", "k8s.io",
		"images", "import", "--snapshotter", "overlayfs", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %v: %s", archive, err, out)
	}
	return nil
}

// busyboxStatic is Debian's busybox-static, the pause image's one program.
const busyboxStatic = "/bin/busybox"

// pauseImage is the pod sandbox: a static busybox sleeping for ever, as the pause
// container does (containerd stops a sandbox with SIGKILL, so it needs no handler).
func pauseImage() ([]imageFile, imageConfig, error) {
	if _, err := os.Stat(busyboxStatic); err != nil {
		return nil, imageConfig{}, fmt.Errorf("the pause image needs Debian's busybox-static (%s): apt-get install busybox-static", busyboxStatic)
	}
	files := []imageFile{
		{Path: "/bin", Dir: true, Mode: 0o755},
		{Path: "/bin/busybox", Source: busyboxStatic, Mode: 0o755},
	}
	return files, imageConfig{Entrypoint: []string{"/bin/busybox", "sleep", "2147483647"}}, nil
}

// waitRealDRA waits until every real DRA node's plugin is registered with its kubelet and
// has published the node's ResourceSlices: until then a claim could not be allocated there,
// or its pod would wait for the driver.
func (c *Cluster) waitRealDRA(ctx context.Context) error {
	for _, n := range c.realNodes {
		if n.dra == nil {
			continue
		}
		want := len(n.pool.resourceSlices(n.poolIndex))
		selector := resourcev1.ResourceSliceSelectorNodeName + "=" + n.name + "," + resourcev1.ResourceSliceSelectorDriver + "=" + DRADriver
		if err := c.waitFor(ctx, n.kubelet, n.name+" DRA kubelet plugin registered, its devices published", func(ctx context.Context) error {
			if !n.dra.registered() {
				return errors.New("the kubelet has not registered the DRA plugin yet")
			}
			list, err := c.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: selector})
			if err != nil {
				return err
			}
			if len(list.Items) != want {
				return fmt.Errorf("%d of %d ResourceSlices published", len(list.Items), want)
			}
			return nil
		}); err != nil {
			return err
		}
		if node, err := c.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{}); err == nil && !RuntimeHasCDI(node) {
			c.progress("%s: its runtime (%s) has no CDI: the DRA plugin prepares claims, but their devices do not reach the containers",
				n.name, node.Status.NodeInfo.ContainerRuntimeVersion)
		}
	}
	return nil
}
