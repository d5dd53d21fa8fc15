package kai

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// crdPoll is how often the mirror looks for KAI's CRDs while a cluster has none: KAI mode
// is on by default in `sluice dev`, where they may be installed later or never.
const crdPoll = 10 * time.Second

// retryAfter is the wait before a queue resync that failed is tried again.
const retryAfter = 2 * time.Second

// Mirror translates KAI's objects into Sluice's as they change (docs/architecture.md, KAI
// mode): every KAI Queue into the Sluice Queue of its name (PlanQueues, pruning mirrored
// queues whose KAI Queue is gone), every KAI PodGroup into the Sluice PodGroup of its
// namespace and name, numbered as a job. It runs on the leader.
type Mirror struct {
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	c    client.Client
	kube kubernetes.Interface
	ids  func(context.Context) (uint32, error)
	log  logr.Logger // the context Run was given
	// events explains on a KAI object why it was not mirrored, where `kubectl describe`
	// shows it to the user who wrote it; set by Run.
	events record.EventRecorder
}

// NotMirrored is the reason of the Warning Event on a KAI Queue or PodGroup that Sluice
// did not take.
const NotMirrored = "NotMirrored"

// NewMirror builds a mirror; ids numbers the PodGroups it creates (nil: none).
func NewMirror(cfg *rest.Config, ids func(context.Context) (uint32, error)) (*Mirror, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Mirror{dyn: dyn, disc: disc, c: c, kube: kube, ids: ids}, nil
}

// Run mirrors until ctx ends, first waiting for the cluster to serve KAI's Queue and
// PodGroup.
func (m *Mirror) Run(ctx context.Context) error {
	m.log = klog.FromContext(ctx)
	for logged := false; !m.served(); logged = true {
		if !logged {
			m.log.Info("KAI mode: waiting for KAI's Queue and PodGroup CRDs (scheduling.run.ai)")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(crdPoll):
		}
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	// KAI's objects are unstructured and carry their kind, so the scheme needs no types.
	m.events = broadcaster.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: "sluice-kai-mirror"})
	factory := dynamicinformer.NewDynamicSharedInformerFactory(m.dyn, 0)
	queues := factory.ForResource(QueuesGVR).Informer()
	groups := factory.ForResource(PodGroupsGVR).Informer()
	resync := make(chan struct{}, 1)
	kick := func() {
		select {
		case resync <- struct{}{}:
		default:
		}
	}
	// Only a spec change (a new generation) is replanned: the status this mirror writes
	// onto KAI Queues must not make it list Sluice's Queues again.
	if _, err := queues.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { kick() }, DeleteFunc: func(any) { kick() },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); !ok || o.GetGeneration() != obj.(*unstructured.Unstructured).GetGeneration() {
				kick()
			}
		},
	}); err != nil {
		return err
	}
	// The mirrored Sluice Queues' status goes back onto their KAI Queues: what KAI's tools
	// and dashboards read.
	mirrored := dynamicinformer.NewFilteredDynamicSharedInformerFactory(m.dyn, 0, "", func(o *metav1.ListOptions) {
		o.LabelSelector = MirrorLabel + "=true"
	}).ForResource(SluiceQueuesGVR).Informer()
	statusWork := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer statusWork.ShutDown()
	if _, err := mirrored.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { statusWork.Add(obj.(*unstructured.Unstructured).GetName()) },
		UpdateFunc: func(_, obj any) { statusWork.Add(obj.(*unstructured.Unstructured).GetName()) },
	}); err != nil {
		return err
	}
	go mirrored.Run(ctx.Done())
	work := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer work.ShutDown()
	enqueue := func(obj any) {
		if key, err := toolscache.MetaNamespaceKeyFunc(obj); err == nil {
			work.Add(key)
		}
	}
	if _, err := groups.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), queues.HasSynced, groups.HasSynced, mirrored.HasSynced) {
		return nil
	}
	m.log.Info("KAI mode: mirroring KAI Queues and PodGroups")
	go m.podGroupWorker(ctx, work, groups.GetStore())
	go m.statusWorker(ctx, statusWork, mirrored.GetStore())
	kick()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resync:
			if err := m.syncQueues(ctx, queues.GetStore().List()); err != nil {
				m.log.Error(err, "KAI mode: mirroring KAI Queues")
				go func() {
					select {
					case <-ctx.Done():
					case <-time.After(retryAfter):
						kick()
					}
				}()
			}
		}
	}
}

// served reports whether the API server serves both KAI kinds at the versions Sluice reads.
func (m *Mirror) served() bool {
	for _, gvr := range []struct{ gv, resource string }{
		{QueuesGVR.GroupVersion().String(), QueuesGVR.Resource},
		{PodGroupsGVR.GroupVersion().String(), PodGroupsGVR.Resource},
	} {
		list, err := m.disc.ServerResourcesForGroupVersion(gvr.gv)
		if err != nil {
			return false
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Name == gvr.resource
		}
		if !found {
			return false
		}
	}
	return true
}

// syncQueues plans from every KAI Queue and every Sluice Queue and applies the plan.
func (m *Mirror) syncQueues(ctx context.Context, objs []any) error {
	var kai []*Queue
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		byName[u.GetName()] = u
		q, err := DecodeQueue(u)
		if err != nil {
			m.log.Error(err, "KAI mode: a KAI Queue Sluice cannot read", "queue", u.GetName())
			m.warn(u, "Sluice cannot read this Queue: %v", err)
			continue
		}
		kai = append(kai, q)
	}
	var have v1alpha1.QueueList
	if err := m.c.List(ctx, &have); err != nil {
		return fmt.Errorf("listing Sluice Queues: %w", err)
	}
	plan := PlanQueues(kai, have.Items, true)
	for _, ch := range plan {
		if ch.Action == Skip {
			m.log.Info("KAI mode: KAI Queue not mirrored", "queue", ch.Name, "reason", ch.Reason)
			if u := byName[ch.Name]; u != nil {
				m.warn(u, "not mirrored into a Sluice Queue: %s", ch.Reason)
			}
		} else if ch.Action != Unchanged {
			m.log.Info("KAI mode: mirroring KAI Queue", "queue", ch.Name, "action", ch.Action, "warnings", ch.Reason)
		}
	}
	return ApplyQueues(ctx, m.c, plan)
}

func (m *Mirror) statusWorker(ctx context.Context, work workqueue.TypedRateLimitingInterface[string], store toolscache.Store) {
	for {
		name, quit := work.Get()
		if quit {
			return
		}
		var err error
		if obj, exists, _ := store.GetByKey(name); exists {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				err = m.syncQueueStatus(ctx, u)
			}
		}
		if err != nil && ctx.Err() == nil {
			m.log.Error(err, "KAI mode: writing a KAI Queue's status (retried)", "queue", name)
			work.AddRateLimited(name)
		} else {
			work.Forget(name)
		}
		work.Done(name)
	}
}

func (m *Mirror) podGroupWorker(ctx context.Context, work workqueue.TypedRateLimitingInterface[string], store toolscache.Store) {
	for {
		key, quit := work.Get()
		if quit {
			return
		}
		err := m.syncPodGroup(ctx, key, store)
		if err != nil && ctx.Err() == nil {
			m.log.Error(err, "KAI mode: mirroring KAI PodGroup", "podgroup", key)
			work.AddRateLimited(key)
		} else {
			work.Forget(key)
		}
		work.Done(key)
	}
}

// syncPodGroup creates the Sluice PodGroup of one KAI PodGroup if it has none yet. A gang's
// spec is set when its pods are made and is not changed afterwards, as KAI's pod grouper
// leaves a PodGroup's spec alone once written.
func (m *Mirror) syncPodGroup(ctx context.Context, key string, store toolscache.Store) error {
	obj, exists, err := store.GetByKey(key)
	if err != nil || !exists {
		return err // gone: garbage collection deletes its Sluice PodGroup
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	kpg, err := DecodePodGroup(u)
	if err != nil {
		m.log.Error(err, "KAI mode: a KAI PodGroup Sluice cannot read", "podgroup", key)
		m.warn(u, "Sluice cannot read this PodGroup: %v", err)
		return nil
	}
	want, err := SluicePodGroup(kpg)
	if err != nil {
		m.log.Error(err, "KAI mode: KAI PodGroup not mirrored", "podgroup", key)
		m.warn(u, "not mirrored into a Sluice PodGroup, so its pods wait: %v", err)
		return nil
	}
	have := &v1alpha1.PodGroup{}
	err = m.c.Get(ctx, types.NamespacedName{Namespace: want.Namespace, Name: want.Name}, have)
	if err == nil {
		if !ownedBy(have, kpg.UID) {
			m.log.Info("KAI mode: a Sluice PodGroup of the KAI PodGroup's name exists and is not its mirror: left as it is", "podgroup", key)
			m.warn(u, "not mirrored: a Sluice PodGroup %s/%s exists that was not written from it; left as it is", have.Namespace, have.Name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	if m.ids != nil {
		id, err := m.ids(ctx)
		if err != nil {
			return fmt.Errorf("a job id: %w", err)
		}
		want.Labels = map[string]string{v1alpha1.JobIDLabel: v1alpha1.FormatJobID(id)}
	}
	if err := m.c.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// warn records a Warning Event on a KAI object; a mirror built without Run records none.
func (m *Mirror) warn(u *unstructured.Unstructured, format string, args ...any) {
	if m.events != nil {
		m.events.Eventf(u, corev1.EventTypeWarning, NotMirrored, format, args...)
	}
}

func ownedBy(pg *v1alpha1.PodGroup, uid types.UID) bool {
	for _, o := range pg.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}
