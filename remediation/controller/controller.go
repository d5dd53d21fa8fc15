package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// podsByNode indexes pods by spec.nodeName.
const podsByNode = "nodeName"

// Run runs the controller until ctx ends. Only one instance may run (the server runs it
// under its leader election). It needs get/list/watch/update/patch on nodes, list/watch/
// patch/delete on pods, create on pods/eviction, create/get/delete on pods in the validation
// namespace, and create on events.
func Run(ctx context.Context, cfg Config, restConfig *rest.Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("remediation controller: %w", err)
	}
	nodeInf, podInf, start, err := nodeAndPodInformers(ctx, cfg.Informers, client)
	if err != nil {
		return fmt.Errorf("remediation controller: %w", err)
	}
	if err := podInf.AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	var resv crclient.Client
	if len(cfg.DeferRepairs.Conditions) > 0 {
		resvScheme := runtime.NewScheme()
		if err := v1alpha1.AddToScheme(resvScheme); err != nil {
			return err
		}
		if resv, err = crclient.New(restConfig, crclient.Options{Scheme: resvScheme}); err != nil {
			return fmt.Errorf("remediation controller: %w", err)
		}
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	c := &controller{
		cfg:       cfg,
		client:    client,
		resv:      resv,
		nodes:     listerscorev1.NewNodeLister(nodeInf.GetIndexer()),
		pods:      podInf.GetIndexer(),
		events:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "sluice-remediation"}),
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recent:    map[string]time.Time{},
		deferred:  map[string]bool{},
		firstSeen: map[string]time.Time{},
		now:       time.Now,
	}
	enqueueNode := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			c.queue.Add(n.Name)
		}
	}
	nodeReg, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueNode, UpdateFunc: func(_, n any) { enqueueNode(n) },
	})
	if err != nil {
		return err
	}
	// A pod leaving or finishing moves a drain or a validation forward.
	enqueuePodNode := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			c.queue.Add(p.Spec.NodeName)
		}
	}
	podReg, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, p any) { enqueuePodNode(p) }, DeleteFunc: enqueuePodNode,
	})
	if err != nil {
		return err
	}
	defer start(ctx)()
	if !cache.WaitForCacheSync(ctx.Done(), nodeReg.HasSynced, podReg.HasSynced) {
		return fmt.Errorf("remediation controller: informers did not sync: %w", ctx.Err())
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	if c.cfg.IdleValidation.Interval > 0 || len(c.cfg.IdleValidation.Partitions) > 0 {
		go c.idleLoop(ctx)
	}
	// One worker: the circuit breaker must see each quarantine before deciding the next.
	for c.next(ctx) {
	}
	return nil
}

// nodeAndPodInformers are the shared cache's node and pod informers, or, without one,
// informers of the controller's own; start runs the latter and returns how to stop them.
// The controller reads the informers' stores directly (listers, an index of pods by
// node), which a controller-runtime cache's reads would deep-copy at every reconcile.
func nodeAndPodInformers(ctx context.Context, shared crcache.Informers, client kubernetes.Interface) (nodes, pods cache.SharedIndexInformer, start func(context.Context) func(), err error) {
	if shared == nil {
		factory := informers.NewSharedInformerFactory(client, 0)
		return factory.Core().V1().Nodes().Informer(), factory.Core().V1().Pods().Informer(), func(ctx context.Context) func() {
			factory.Start(ctx.Done())
			return factory.Shutdown
		}, nil
	}
	indexed := func(obj crclient.Object) (cache.SharedIndexInformer, error) {
		inf, err := shared.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		sii, ok := inf.(cache.SharedIndexInformer)
		if !ok {
			return nil, fmt.Errorf("the shared %T informer (%T) has no store to read", obj, inf)
		}
		return sii, nil
	}
	if nodes, err = indexed(&corev1.Node{}); err != nil {
		return nil, nil, nil, err
	}
	if pods, err = indexed(&corev1.Pod{}); err != nil {
		return nil, nil, nil, err
	}
	return nodes, pods, func(context.Context) func() { return func() {} }, nil
}

type controller struct {
	cfg    Config
	client kubernetes.Interface
	// resv writes the maintenance reservations of deferred repairs (defer.go); nil when
	// no fault may wait.
	resv   crclient.Client
	nodes  listerscorev1.NodeLister
	pods   cache.Indexer
	events record.EventRecorder
	queue  workqueue.TypedRateLimitingInterface[string]
	// recent holds quarantines this controller started, ahead of the informer cache, so the
	// circuit breaker counts them at once.
	mu       sync.Mutex
	recent   map[string]time.Time
	deferred map[string]bool // nodes the breaker held back, to announce it once
	// firstSeen is when the idle sweep first met a node never validated.
	firstSeen map[string]time.Time
	now       func() time.Time
}

func (c *controller) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	after, err := c.reconcile(ctx, name)
	switch {
	case err != nil && ctx.Err() == nil:
		klog.FromContext(ctx).Error(err, "remediation: retrying", "node", name)
		c.queue.AddRateLimited(name)
	case after > 0:
		c.queue.Forget(name)
		c.queue.AddAfter(name, after)
	default:
		c.queue.Forget(name)
	}
	return true
}

func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}
