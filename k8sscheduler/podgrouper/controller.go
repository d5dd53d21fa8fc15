package podgrouper

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Controller gives every unbound pod of Sluice's schedulers its PodGroup:
// it creates the group (once per group) and names it on the pod in the
// sluice.dev/pod-group annotation, which is how the scheduler finds a pod's
// gang. Pods without the annotation are never placed, so no pod starts
// outside its gang.
type Controller struct {
	kube  kubernetes.Interface
	c     client.Client
	names []string
	log   logr.Logger // the context Run was given
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	ids   JobIDSource
	// made remembers the groups named at admission that exist, by namespace, name and
	// the owner's UID, so the other pods of a gang cost no create attempt, and the groups
	// pods name that are numbered, by namespace and name. Forgetting (past maxMade) costs
	// only a create answered AlreadyExists, or a read.
	madeMu sync.Mutex
	made   map[string]struct{}
	// fed is set by Observer: pods come from the caller's informer and wait in
	// pending until a worker has grouped them, instead of a pod informer of its own.
	fed       bool
	pendingMu sync.Mutex
	pending   map[types.NamespacedName]*corev1.Pod
}

const maxMade = 1 << 16

// WithJobIDs makes the groups the controller creates jobs with ids from ids.
func (g *Controller) WithJobIDs(ids JobIDSource) *Controller {
	g.ids = ids
	return g
}

// NewController watches the pods of the given scheduler names.
func NewController(cfg *rest.Config, schedulerNames []string) (*Controller, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	pc := rest.CopyConfig(cfg) // pod patches and its own watch in protobuf, cheaper than JSON
	pc.ContentType = runtime.ContentTypeProtobuf
	kube, err := kubernetes.NewForConfig(pc)
	if err != nil {
		return nil, err
	}
	return &Controller{kube: kube, c: c, names: schedulerNames, made: map[string]struct{}{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())}, nil
}

// Observer makes the controller take its pods from the caller instead of watching them:
// the returned function must see every pod add and update (the scheduler's informer
// calls it, see scheduler.Config.PodObserver). One pod watch then serves both, which
// spares the API server a second watch of every unbound pod (and a deep copy of each
// pod it binds, which leaves that watch's field selector) and this process a second
// decode of every pod event. Call it before Run.
func (g *Controller) Observer() func(*corev1.Pod) {
	g.fed = true
	g.pending = map[types.NamespacedName]*corev1.Pod{}
	return g.observe
}

// observe queues pod when it is one of the controller's, unbound and without its group.
// A queued pod that is bound or being deleted meanwhile is dropped, so its worker finds
// nothing to do. It runs on the informer's goroutine, so it only files the pod.
func (g *Controller) observe(pod *corev1.Pod) {
	if !slices.Contains(g.names, pod.Spec.SchedulerName) {
		return
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		g.pendingMu.Lock()
		delete(g.pending, key)
		g.pendingMu.Unlock()
		return
	}
	if !g.needsGroup(pod) {
		return
	}
	g.pendingMu.Lock()
	g.pending[key] = pod
	g.pendingMu.Unlock()
	g.queue.Add(key)
}

// fedPod is the latest observed version of a queued pod.
func (g *Controller) fedPod(key types.NamespacedName) *corev1.Pod {
	g.pendingMu.Lock()
	defer g.pendingMu.Unlock()
	return g.pending[key]
}

// grouped drops a fed pod that needs nothing more; a later observation files it again.
func (g *Controller) grouped(key types.NamespacedName, pod *corev1.Pod) {
	if !g.fed {
		return
	}
	g.pendingMu.Lock()
	defer g.pendingMu.Unlock()
	if g.pending[key] == pod {
		delete(g.pending, key)
	}
}

// Run groups pods until ctx ends.
func (g *Controller) Run(ctx context.Context) error {
	g.log = klog.FromContext(ctx)
	defer g.queue.ShutDown()
	if g.fed {
		g.work(ctx, g.fedPod)
		return nil
	}
	var synced []cache.InformerSynced
	var indexers []cache.Indexer
	for _, name := range g.names {
		sel := fields.AndSelectors(fields.OneTermEqualSelector("spec.schedulerName", name),
			fields.OneTermEqualSelector("spec.nodeName", "")).String()
		f := informers.NewSharedInformerFactoryWithOptions(g.kube, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
		inf := f.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    g.enqueue,
			UpdateFunc: func(_, obj any) { g.enqueue(obj) },
		}); err != nil {
			return err
		}
		f.Start(ctx.Done())
		defer f.Shutdown()
		synced = append(synced, inf.HasSynced)
		indexers = append(indexers, inf.GetIndexer())
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	get := func(key types.NamespacedName) *corev1.Pod {
		for _, idx := range indexers {
			if obj, ok, _ := idx.GetByKey(key.Namespace + "/" + key.Name); ok {
				return obj.(*corev1.Pod)
			}
		}
		return nil
	}
	g.work(ctx, get)
	return nil
}

// work groups queued pods, read with get, until ctx ends.
func (g *Controller) work(ctx context.Context, get func(types.NamespacedName) *corev1.Pod) {
	// Each group costs one create round trip (more under a busy API server); a stream
	// of single-pod workloads needs many in flight to keep up with its creators. At 32
	// a stream's creates fell behind; at 128, as many as the scheduler's binds, much less
	// so (measured: docs/benchmarks.md, Sluice's scheduler alone).
	const workers = 128
	for range workers {
		go func() {
			for g.next(ctx, get) {
			}
		}()
	}
	<-ctx.Done()
}

func (g *Controller) enqueue(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !g.needsGroup(pod) || pod.DeletionTimestamp != nil {
		return
	}
	g.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
}

func (g *Controller) next(ctx context.Context, get func(types.NamespacedName) *corev1.Pod) bool {
	key, quit := g.queue.Get()
	if quit {
		return false
	}
	defer g.queue.Done(key)
	pod := get(key)
	if pod == nil || !g.needsGroup(pod) {
		g.grouped(key, pod)
		g.queue.Forget(key)
		return true
	}
	if err := g.group(ctx, pod); err != nil {
		g.log.Error(err, "grouping pod", "pod", key.String())
		if jobIDsUsedUp(err) {
			g.warnNoJobID(ctx, pod, err)
		}
		g.queue.AddRateLimited(key)
		return true
	}
	g.grouped(key, pod)
	g.queue.Forget(key)
	return true
}

// needsGroup: the pod names no group yet, the webhook named one that may not exist, or
// the pod names a group that may not be numbered yet (usergroup.go). A group of one (jobstate.GroupOfOne) needs none: the scheduler writes its PodGroup if and
// when it has to wait or is evicted.
func (g *Controller) needsGroup(pod *corev1.Pod) bool {
	if jobstate.GroupOfOne(pod) {
		return false
	}
	if pod.Annotations[v1alpha1.PodGroupAnnotation] == "" {
		return true
	}
	g.madeMu.Lock()
	defer g.madeMu.Unlock()
	_, done := g.made[madeOrNamedKey(pod)]
	return !done
}

// madeKey names a group named at admission together with its owner, so a bare pod
// recreated under the same name is not taken for its predecessor.
func madeKey(pod *corev1.Pod) string {
	owner := string(pod.UID)
	if ref := ControllerOf(pod.OwnerReferences); ref != nil {
		owner = string(ref.UID)
	}
	return pod.Namespace + "/" + pod.Annotations[v1alpha1.PodGroupAnnotation] + "/" + owner
}

// group creates the pod's PodGroup if needed and names it on the pod, unless the
// webhook named it at admission.
func (g *Controller) group(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pg, err := EnsurePodGroupWithID(ctx, g.c, pod, g.ids)
	if err != nil {
		return err
	}
	if derived(pod) || userNamed(pod) {
		g.remember(madeOrNamedKey(pod))
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{v1alpha1.PodGroupAnnotation: pg.Name}}})
	if err != nil {
		return err
	}
	_, err = g.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("naming PodGroup %s on pod %s/%s: %w", pg.Name, pod.Namespace, pod.Name, err)
	}
	// The group it created is numbered: the pod's next sight (now naming it) costs no read.
	g.remember(pod.Namespace + "/" + pg.Name)
	return nil
}

// madeOrNamedKey is what the controller remembers of a grouped pod's group: a group named
// at admission that exists (madeKey), or a group the pod names that is numbered.
func madeOrNamedKey(pod *corev1.Pod) string {
	if derived(pod) {
		return madeKey(pod)
	}
	return userGroupKey(pod)
}

// remember records key in made, forgetting everything past maxMade.
func (g *Controller) remember(key string) {
	g.madeMu.Lock()
	defer g.madeMu.Unlock()
	if len(g.made) >= maxMade {
		clear(g.made)
	}
	g.made[key] = struct{}{}
}
