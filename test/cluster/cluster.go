package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultStartTimeout bounds Start when its context has no deadline.
const DefaultStartTimeout = 5 * time.Minute

// Options configure Start.
type Options struct {
	// Spec is the simulated cluster; the zero value means DefaultSpec().
	Spec Spec
	// Dir holds the rig's state: etcd data, certificates, kubeconfigs and one
	// log per component under logs/. Empty means a new temporary directory,
	// removed by Stop. Two rigs running at once need two directories.
	Dir string
	// Assets is the directory with the binaries; empty means $SLUICE_ASSETS,
	// then bin/ at the root of the repository holding the working directory.
	Assets string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Benchmark trims the control plane to what a scheduler benchmark needs, so its
	// own overhead takes less of the cores the contenders share: no kube-scheduler
	// (each contender brings its own) and only the kube-controller-manager controllers
	// that pods need to be created on Ready nodes (see benchmarkControllers).
	Benchmark bool
	// DefaultRequestLimits keeps kube-apiserver's own limits on requests in flight (400
	// reads, 200 writes: the seats API Priority and Fairness divides among its priority
	// levels), which the rig otherwise raises fourfold. A benchmark of clients classified
	// as in a cluster sets it, so what it shows holds for an API server as shipped.
	DefaultRequestLimits bool
	// SluiceBinary, when the spec has real nodes, is built into the sluice image
	// (SluiceImage) that job pods' launcher init container runs; empty leaves it to
	// LoadSluiceImage once a binary exists (a test's build runs while the rig starts).
	SluiceBinary string
}

// Cluster is a running rig. All methods are safe for concurrent use.
type Cluster struct {
	// Kubeconfig is the path of an admin (system:masters) kubeconfig.
	Kubeconfig string
	// ServerKubeconfig is the Sluice server's own kubeconfig (user sluice-server, also
	// system:masters): `sluice dev` runs the server with it, so what only Sluice may
	// write (webhook.Policy) is refused to the admin's kubeconfig.
	ServerKubeconfig string
	// WebhookClientCA is the PEM file of the CA whose certificate the API server
	// presents to admission webhooks (webhook.Config.ClientCAFile).
	WebhookClientCA string
	// URL is the kube-apiserver's address, https://127.0.0.1:port.
	URL string
	// Dir is the state directory (see Options.Dir).
	Dir string

	spec      Spec
	layout    layout
	log       io.Writer
	removeDir bool
	benchmark bool
	// defaultLimits: Options.DefaultRequestLimits.
	defaultLimits bool
	restConfig    *rest.Config
	client        kubernetes.Interface

	mu         sync.Mutex
	components []*component // in start order
	stopOnce   sync.Once
	// stopHandout ends the simulated device plugin (gpudevices.go); handoutDone closes
	// once it has.
	stopHandout context.CancelFunc
	handoutDone <-chan struct{}

	// assets is the directory the binaries came from.
	assets string
	// realNodes run pods in containers (realnode.go); realLock keeps other rigs' off
	// this machine while they run; images are what every real node's runtime holds.
	realNodes    []*realNode
	realLock     *os.File
	images       *imageSet
	sluiceBinary string
}

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler (not on a
// Benchmark rig) and kwok, creates the spec's nodes and returns once every node is Ready and
// schedulable. ctx bounds startup only; the rig runs until Stop. On error,
// everything started so far has been stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	spec := opts.Spec
	if len(spec.NodePools) == 0 {
		spec = DefaultSpec()
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	assets, err := resolveAssets(opts.Assets)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	c, err := newCluster(spec, opts)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx, assets); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// newCluster prepares the state directory and picks ports.
func newCluster(spec Spec, opts Options) (*Cluster, error) {
	c := &Cluster{spec: spec, log: opts.Log, benchmark: opts.Benchmark, defaultLimits: opts.DefaultRequestLimits, sluiceBinary: opts.SluiceBinary}
	if c.log == nil {
		c.log = io.Discard
	}
	dir := opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sluice-rig-")
		if err != nil {
			return nil, err
		}
		dir, c.removeDir = tmp, true
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	c.layout = layout{dir: dir, etcdClient: ports[0], etcdPeer: ports[1], apiServer: ports[2], kcm: ports[3], scheduler: ports[4], kwok: ports[5]}
	for _, p := range c.layout.ownedPaths() {
		if err := os.RemoveAll(p); err != nil {
			return nil, fmt.Errorf("clear old rig state: %w", err)
		}
	}
	for _, d := range []string{dir, c.layout.path("logs"), c.layout.path("kubeconfigs"), c.layout.path("kwok", "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	c.URL = c.layout.apiServerURL()
	c.Kubeconfig = c.layout.kubeconfig("admin")
	c.ServerKubeconfig = c.layout.kubeconfig("sluice")
	c.WebhookClientCA = c.layout.path("pki", "webhook-client-ca.crt")
	return c, nil
}

func (c *Cluster) progress(format string, args ...any) {
	fmt.Fprintf(c.log, "rig: "+format+"\n", args...)
}

// ComponentKubeconfig is the kubeconfig of a control-plane component's identity:
// kube-scheduler (system:kube-scheduler) or kube-controller-manager, which the default
// RBAC and API Priority and Fairness configuration classify as in a kubeadm cluster.
func (c *Cluster) ComponentKubeconfig(component string) string {
	return c.layout.kubeconfig(component)
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns an admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Spec returns the spec the rig was started with.
func (c *Cluster) Spec() Spec { return c.spec }

// LogPath is the log file of a component: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler or kwok.
func (c *Cluster) LogPath(component string) string {
	return c.layout.path("logs", component+".log")
}

// Stop stops every component in reverse start order: SIGTERM to its process
// group, SIGKILL after a grace period. It is idempotent and safe to call from
// any goroutine, such as a signal handler; concurrent calls all return once
// everything has stopped.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		comps := c.components
		stopHandout, handoutDone := c.stopHandout, c.handoutDone
		c.mu.Unlock()
		if stopHandout != nil {
			stopHandout()
			<-handoutDone
		}
		c.stopRealNodes()
		for i := len(comps) - 1; i >= 0; i-- {
			comps[i].stop(stopGrace)
		}
		if c.removeDir {
			os.RemoveAll(c.Dir)
		}
		if len(comps) > 0 {
			c.progress("stopped %d components", len(comps))
		}
	})
}

// Leftovers reports anything the rig started that is still alive after Stop:
// a process in one of its process groups, any process whose command line
// names the state directory, or a port still taken.
func (c *Cluster) Leftovers() error {
	c.mu.Lock()
	comps := c.components
	c.mu.Unlock()
	var errs []error
	for _, comp := range comps {
		if groupAlive(comp.pid()) {
			errs = append(errs, fmt.Errorf("%s: process group %d still has processes", comp.name, comp.pid()))
		}
	}
	for _, pid := range processesMentioning(c.Dir) {
		errs = append(errs, fmt.Errorf("process %d still runs with %s on its command line", pid, c.Dir))
	}
	for _, n := range c.realNodes {
		for _, left := range n.leftovers() {
			errs = append(errs, fmt.Errorf("real node %s: %s is still there", n.name, left))
		}
	}
	if len(c.realNodes) > 0 {
		if _, err := c.iptablesForward("-C"); err == nil {
			errs = append(errs, errors.New("the iptables rule forwarding the kubernetes Service is still there"))
		}
	}
	l := c.layout
	for _, p := range []int{l.etcdClient, l.etcdPeer, l.apiServer, l.kcm, l.scheduler} {
		if portInUse(p) {
			errs = append(errs, fmt.Errorf("port %d is still in use", p))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) loadClient() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	// Tests and benchmarks create objects in bursts; the client-side default
	// of 5 QPS would measure the limiter, not the cluster.
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c.restConfig, c.client = cfg, client
	return nil
}
