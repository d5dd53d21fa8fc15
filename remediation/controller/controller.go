package controller

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	factory := informers.NewSharedInformerFactory(client, 0)
	nodeInf := factory.Core().V1().Nodes()
	podInf := factory.Core().V1().Pods()
	if err := podInf.Informer().AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	c := &controller{
		cfg:       cfg,
		client:    client,
		nodes:     nodeInf.Lister(),
		pods:      podInf.Informer().GetIndexer(),
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
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueNode, UpdateFunc: func(_, n any) { enqueueNode(n) },
	}); err != nil {
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
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, p any) { enqueuePodNode(p) }, DeleteFunc: enqueuePodNode,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("remediation controller: %v cache did not sync", typ)
		}
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

func (c *controller) logf(format string, args ...any) {
	log.Printf("remediation: "+format, args...)
}

type controller struct {
	cfg    Config
	client kubernetes.Interface
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
		log.Printf("remediation: node %s: %v", name, err)
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
