package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// contender is a scheduler the harness starts for each mode and stops after it.
type contender interface {
	schedulerName() string
	// start runs the scheduler and returns how to read its CPU seconds and peak RSS
	// since the start.
	start(ctx context.Context) (usageProbe, error)
	stop()
}

// bareBinder binds pending pods round-robin to the nodes through pods/binding, with no
// scheduling logic at all: the ceiling of what the API server allows.
type bareBinder struct {
	rc     *rest.Config
	cancel context.CancelFunc
	done   sync.WaitGroup
}

const bareName = "bench-bare"

// bareWorkers is how many binds the bare binder keeps in flight: as many as Sluice's
// scheduler (scheduler.Config.BindWorkers), so the ceiling is not held down by its own
// concurrency (32 capped a backlog below what the API server allows; measured:
// docs/benchmarks.md, Sluice's scheduler alone).
const bareWorkers = 128

func (b *bareBinder) schedulerName() string { return bareName }

func (b *bareBinder) start(ctx context.Context) (usageProbe, error) {
	probe := selfUsage()
	kube, err := kubernetes.NewForConfig(protobuf(b.rc))
	if err != nil {
		return nil, err
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	ctx, b.cancel = context.WithCancel(ctx)
	pending := make(chan *corev1.Pod, 1024)
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.AndSelectors(fields.OneTermEqualSelector("spec.schedulerName", bareName),
			fields.OneTermEqualSelector("spec.nodeName", "")).String()
	}))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			select {
			case pending <- p:
			case <-ctx.Done():
			}
		}
	}}); err != nil {
		return nil, err
	}
	var next atomic.Int64
	for range bareWorkers {
		b.done.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-pending:
					node := nodes.Items[int(next.Add(1)-1)%len(nodes.Items)].Name
					_ = kube.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
						ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
						Target:     corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
				}
			}
		})
	}
	b.done.Go(func() { inf.Run(ctx.Done()) })
	return probe, nil
}

func (b *bareBinder) stop() {
	b.cancel()
	b.done.Wait()
}

// kubeSchedulerProcess runs bin/kube-scheduler (the rig's own release) with the admin
// credentials (system:kube-scheduler's with Options.ClusterIdentities) under a profile
// name of its own, client QPS raised so it is not throttled.
// A process of its own, rather than the rig's running one, lets backlog mode start it
// after the pods exist and lets its CPU and memory be read alone.
type kubeSchedulerProcess struct {
	kubeconfig, assets string
	dir                string // where its configuration and log go
	log                io.Writer
	proc               childProcess
}

const kubeSchedulerName = "bench-kube-scheduler"

func (k *kubeSchedulerProcess) schedulerName() string { return kubeSchedulerName }

func (k *kubeSchedulerProcess) start(ctx context.Context) (usageProbe, error) {
	bin, err := assetPath(k.assets, "kube-scheduler")
	if err != nil {
		return nil, err
	}
	dir := k.dir
	cfgPath := filepath.Join(dir, "bench-kube-scheduler.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 5000
  burst: 10000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %s
`, k.kubeconfig, kubeSchedulerName)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return k.proc.start(filepath.Join(dir, "bench-kube-scheduler.log"), bin, "--config="+cfgPath, "--secure-port=0")
}

func (k *kubeSchedulerProcess) stop() { k.proc.stop() }

// assetPath finds a rig binary: in assets if given, else $SLUICE_ASSETS, else bin/ in
// the nearest directory above the working directory that has one.
func assetPath(assets, name string) (string, error) {
	if assets == "" {
		assets = os.Getenv("SLUICE_ASSETS")
	}
	if assets != "" {
		return filepath.Join(assets, name), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no bin/%s above the working directory; set SLUICE_ASSETS", name)
		}
		dir = parent
	}
}
