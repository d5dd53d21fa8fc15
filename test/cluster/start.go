package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pollInterval is how often startup checks whether a component is ready.
const pollInterval = 100 * time.Millisecond

// start brings the components up one after another, each only once what it
// depends on answers.
func (c *Cluster) start(ctx context.Context, assets string) error {
	began := time.Now()
	l := c.layout
	keys, err := writePKI(l.path("pki"), []string{
		"localhost", "127.0.0.1", "::1", kubernetesService,
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	})
	if err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	for name, cred := range keys.creds {
		if err := writeKubeconfig(l.kubeconfig(name), c.URL, keys.ca.certPEM, cred); err != nil {
			return fmt.Errorf("write %s kubeconfig: %w", name, err)
		}
	}
	if err := os.WriteFile(l.path("kwok", "pod.log"), simulatedLog(time.Now()), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(l.path("kwok", "stages.yaml"), kwokConfig(l.path("kwok", "pod.log")), 0o600); err != nil {
		return err
	}
	if err := c.loadClient(); err != nil {
		return err
	}
	httpClient, err := c.componentHTTPClient(keys)
	if err != nil {
		return err
	}

	c.assets = assets
	bin := func(name string) string { return filepath.Join(assets, name) }
	etcd, err := c.run("etcd", bin("etcd"), l.etcdArgs(), nil)
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, etcd, "etcd healthy", func(ctx context.Context) error {
		return httpGetOK(ctx, httpClient, l.etcdURL()+"/health")
	}); err != nil {
		return err
	}

	apiServer, err := c.run("kube-apiserver", bin("kube-apiserver"), l.apiServerArgs(keys.files, c.defaultLimits, c.spec.RealNodeCount() > 0), nil)
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, apiServer, "kube-apiserver ready", func(ctx context.Context) error {
		return c.client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}); err != nil {
		return err
	}

	kcm, err := c.run("kube-controller-manager", bin("kube-controller-manager"), l.controllerManagerArgs(keys.files, c.benchmark, c.spec.HasDRA()), nil)
	if err != nil {
		return err
	}
	healthz := []healthzPort{{kcm, l.kcm}}
	if !c.benchmark {
		scheduler, err := c.run("kube-scheduler", bin("kube-scheduler"), l.schedulerArgs(keys.files), nil)
		if err != nil {
			return err
		}
		healthz = append(healthz, healthzPort{scheduler, l.scheduler})
	}
	// kwok reads ~/.kwok/kwok.yaml if there is one; a private HOME keeps a
	// developer's own kwok setup out of the rig.
	kwok, err := c.run("kwok", bin("kwok"), l.kwokArgs(keys.files), []string{"HOME=" + l.path("kwok", "home")})
	if err != nil {
		return err
	}
	for _, comp := range healthz {
		url := "https://127.0.0.1:" + strconv.Itoa(comp.port) + "/healthz"
		if err := c.waitFor(ctx, comp.c, comp.c.name+" healthy", func(ctx context.Context) error { return httpGetOK(ctx, httpClient, url) }); err != nil {
			return err
		}
	}
	// Pods are rejected until their namespace's default ServiceAccount exists;
	// kube-controller-manager creates it shortly after it starts.
	if err := c.waitFor(ctx, kcm, "default ServiceAccount created", func(ctx context.Context) error {
		_, err := c.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	c.progress("control plane ready in %s", time.Since(began).Round(time.Millisecond))

	if err := c.createNodes(ctx); err != nil {
		return err
	}
	if err := c.publishDRA(ctx); err != nil {
		return err
	}
	if err := c.startRealNodes(ctx, keys); err != nil {
		return err
	}
	if err := c.waitNodesReady(ctx, kwok); err != nil {
		return err
	}
	if err := c.waitRealDRA(ctx); err != nil {
		return err
	}
	handout, stop := context.WithCancel(context.Background())
	c.mu.Lock()
	c.stopHandout, c.handoutDone = stop, runDeviceHandout(handout, c.client)
	c.mu.Unlock()
	c.progress("ready in %s: %d nodes; export KUBECONFIG=%s", time.Since(began).Round(time.Millisecond), c.spec.NodeCount(), c.Kubeconfig)
	return nil
}

// healthzPort is a started component and the port of its /healthz.
type healthzPort struct {
	c    *component
	port int
}

// run starts a component and registers it for Stop.
func (c *Cluster) run(name, bin string, args, env []string) (*component, error) {
	comp, err := startComponent(name, bin, args, env, c.layout.path("logs"))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.components = append(c.components, comp)
	c.mu.Unlock()
	c.progress("%s started (pid %d), log %s", name, comp.pid(), comp.logPath)
	return comp, nil
}

// waitFor polls ready until it succeeds. It gives up, naming comp and quoting
// its log, when ctx ends; and as soon as any started component exits, quoting
// that one's log instead, since that is where the cause is.
func (c *Cluster) waitFor(ctx context.Context, comp *component, what string, ready func(context.Context) error) error {
	began := time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error // the last failed check not cut short by ctx itself
	for {
		if dead := c.exitedComponent(); dead != nil {
			_, err := dead.exited()
			return dead.failure(fmt.Errorf("exited during startup: %w", err))
		}
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ready(callCtx)
		cancel()
		if err == nil {
			c.progress("%s in %s", what, time.Since(began).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return comp.failure(fmt.Errorf("waiting for %s: gave up after %s (last check: %v): %w", what, time.Since(began).Round(time.Second), last, ctx.Err()))
		case <-tick.C:
		}
	}
}

func (c *Cluster) exitedComponent() *component {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		if done, _ := comp.exited(); done {
			return comp
		}
	}
	return nil
}

// componentHTTPClient trusts the rig's CA, for health checks of etcd,
// kube-controller-manager and kube-scheduler.
func (c *Cluster) componentHTTPClient(keys *pki) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(keys.ca.certPEM) {
		return nil, errors.New("rig CA certificate does not parse")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

func httpGetOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// createNodes registers the spec's nodes; kwok takes them over from there.
func (c *Cluster) createNodes(ctx context.Context) error {
	nodes, err := c.spec.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
	}
	c.progress("created %d nodes", len(nodes))
	return nil
}

// waitNodesReady waits until every spec node reports Ready and carries none of
// the taints the node lifecycle controller puts on nodes that are not.
func (c *Cluster) waitNodesReady(ctx context.Context, kwok *component) error {
	want := c.spec.NodeCount()
	last := -1
	return c.waitFor(ctx, kwok, "all nodes Ready", func(ctx context.Context) error {
		list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelPartition})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			if nodeSchedulable(&list.Items[i]) {
				ready++
			}
		}
		if err := c.annotateRealNodes(ctx, list.Items); err != nil {
			return err
		}
		if ready != last {
			c.progress("nodes ready %d/%d", ready, want)
			last = ready
		}
		if ready < want {
			return fmt.Errorf("%d of %d nodes ready", ready, want)
		}
		return nil
	})
}

func nodeSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
