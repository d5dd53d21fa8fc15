// Package scheduler runs the scheduling core (bridge) as a Kubernetes scheduler: informers
// keep a converted cache of nodes, pods, PodGroups, Queues, Partitions and QOS; a cycle
// loop builds a snapshot from it, runs bridge.Schedule and carries out the decisions
// (binds with the GPU assignment, evictions, Slurm-job pod creates) and writes PodGroup and
// Queue status. All scheduling logic stays in bridge; this package only translates.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Scheduler is the Kubernetes adapter of the scheduling core. Run it only while leader.
type Scheduler struct {
	cfg     Config
	log     logr.Logger // the context Run was given, for informer handlers
	rest    *rest.Config
	scheme  *runtime.Scheme
	kube    kubernetes.Interface
	crs     client.Client
	factory PodFactory
	metrics *metrics
	cache   *cache
	core    bridge.Scheduler // reused by the cycle loop only
	events  record.EventRecorder
	usage   usageFeed
	// batchInf watches the Slurm API's submit batches (batches.go); nil without
	// Config.SubmitBatchNamespace.
	batchInf toolscache.SharedIndexInformer

	work chan func(context.Context) // binds, evictions, creates and status writes
	// evicting are pods whose eviction was requested and that have not gone yet.
	evicting map[string]bool
	// parked are shared-GPU binds waiting for their reservations' devices (guarded by
	// the cache's mu).
	parked    []parkedBinds
	queueBook queueBook // touched only by the cycle loop
	batchBook batchReasonBook
	nodeMu    sync.Mutex
	nodeBad   map[string]string // node -> the annotation error last reported
	// draMu makes resource claim allocations one at a time (dra_bind.go).
	draMu sync.Mutex
}

// New prepares a scheduler; nothing talks to the API server until Run. reg receives the
// scheduler's metrics (nil: not registered). factory makes the pods of Slurm jobs; with a
// nil factory, PodGroups describing Slurm jobs stay pending with a reason.
func New(cfg Config, rc *rest.Config, reg prometheus.Registerer, factory PodFactory) (*Scheduler, error) {
	cfg = cfg.withDefaults()
	if cfg.Informers != nil && cfg.PodObserver != nil {
		return nil, errors.New("scheduler: a PodObserver needs the scheduler's own informers: give it to the shared cache's transform")
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = cfg.ClientQPS, cfg.ClientBurst
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// Binds, evictions, Slurm pod creates and Events in protobuf, as kube-scheduler
	// sends them: cheaper than JSON for the API server and for this process.
	pc := rest.CopyConfig(rc)
	pc.ContentType = runtime.ContentTypeProtobuf
	kube, err := kubernetes.NewForConfig(pc)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	crs, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	m := newMetrics()
	if reg != nil {
		if err := m.register(reg); err != nil {
			return nil, fmt.Errorf("scheduler: metrics: %w", err)
		}
	}
	c := newCache()
	c.slurmPods = factory != nil
	c.tolerated = cfg.ToleratedTaints
	c.dra = newDRAState(cfg.GPUDeviceClasses)
	s := &Scheduler{
		cfg: cfg, rest: rc, scheme: scheme, kube: kube, crs: crs, factory: factory, metrics: m, cache: c,
		work: make(chan func(context.Context), 4*cfg.BindWorkers), evicting: map[string]bool{},
		queueBook: queueBook{written: map[string]string{}}, nodeBad: map[string]string{},
	}
	if cfg.SubmitBatchNamespace != "" {
		s.batchInf = s.batchInformer(cfg.SubmitBatchNamespace)
	}
	return s, nil
}

// Run watches the cluster and schedules until ctx ends, then waits for the writes in
// flight. It returns an error only when the informers cannot start.
func (s *Scheduler) Run(ctx context.Context) error {
	s.log = klog.FromContext(ctx)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	s.events = broadcaster.NewRecorder(s.scheme, corev1.EventSource{Component: s.cfg.SchedulerName})

	informers := s.cfg.Informers
	var own crcache.Cache // the scheduler's own informers, when it is given none
	if informers == nil {
		var err error
		if own, err = crcache.New(s.rest, crcache.Options{Scheme: s.scheme, DefaultTransform: transform(s.cfg.SchedulerName, s.cfg.PodObserver)}); err != nil {
			return fmt.Errorf("scheduler: informers: %w", err)
		}
		informers = own
	}
	watches := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&corev1.Node{}, s.nodeHandlers()},
		{&corev1.Pod{}, s.podHandlers()},
		{&v1alpha1.PodGroup{}, s.podGroupHandlers()},
		{&v1alpha1.Queue{}, s.queueHandlers()},
		{&v1alpha1.QOS{}, s.qosHandlers()},
		{&v1alpha1.Partition{}, s.partitionHandlers()},
		{&v1alpha1.Reservation{}, s.reservationHandlers()},
		{&corev1.Namespace{}, s.namespaceHandlers()},
		{&corev1.PersistentVolumeClaim{}, s.claimHandlers()},
		{&corev1.PersistentVolume{}, s.volumeHandlers()},
		{&storagev1.StorageClass{}, s.storageClassHandlers()},
		{&resourcev1.DeviceClass{}, s.deviceClassHandlers()},
		{&resourcev1.ResourceSlice{}, s.resourceSliceHandlers()},
		{&resourcev1.ResourceClaimTemplate{}, s.resourceClaimTemplateHandlers()},
		{&resourcev1.ResourceClaim{}, s.resourceClaimHandlers()},
	}
	var synced []toolscache.InformerSynced
	for _, w := range watches {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("scheduler: informer for %T: %w", w.obj, err)
		}
		reg, err := inf.AddEventHandler(w.h)
		if err != nil {
			return fmt.Errorf("scheduler: informer for %T: %w", w.obj, err)
		}
		synced = append(synced, reg.HasSynced)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if inf := s.batchInf; inf != nil {
		reg, err := inf.AddEventHandler(s.batchHandlers())
		if err != nil {
			return fmt.Errorf("scheduler: informer for submit batches: %w", err)
		}
		synced = append(synced, reg.HasSynced)
		go inf.RunWithContext(ctx)
	}
	cacheDone := make(chan error, 1)
	if own != nil {
		go func() { cacheDone <- own.Start(ctx) }()
	} else {
		close(cacheDone) // the caller runs the shared cache
	}
	// Each handler's own sync: with a shared cache started long ago, the informers are
	// synced before this scheduler's handlers have seen what they hold.
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		cancel()
		if err := <-cacheDone; err != nil {
			return fmt.Errorf("scheduler: informers: %w", err)
		}
		return ctx.Err()
	}
	var workers sync.WaitGroup
	if s.cfg.Usage != nil {
		workers.Go(func() { s.usage.run(ctx, s.cfg.UsageRefresh, s.cfg.Usage) })
	}
	for range s.cfg.BindWorkers {
		workers.Go(func() {
			for job := range s.work {
				job(ctx) // after leadership ends, writes in the queue fail fast
			}
		})
	}
	s.loop(ctx)
	close(s.work)
	workers.Wait()
	cancel()
	<-cacheDone
	return nil
}

// changeSpacing keeps a steady stream of changes from running the cycle loop hot: while
// changes keep arriving during the cycles, a cycle begins no sooner than this many times
// the last cycle's length after that cycle ended, so such cycles take at most about a
// twentieth of a core. Unspaced, a stream of pod creates in a 4000-pod cluster ran a
// cycle after every few creates, a large share of a core spent mostly finding that only
// the newest pods changed; at 9 a stream's cycles still cost measurably more CPU per pod
// than at 19 (measured: docs/benchmarks.md, Sluice's scheduler alone). A change after a
// cycle that saw fewer than streamChanges (a reclaim's next pod) waits only Debounce, and
// so does every change while evictions are in flight: the victims' going is what a
// reclaiming job waits for. Spacing those too made reclaim several times slower, its worst
// past the design's 1 s (measured: the same section).
const changeSpacing = 19

// streamChanges is how many changes during one wait-and-cycle make a stream. A reclaim
// brings two or three in a row (the pod, its group, its victim's going), a stream of
// creates at 200 pods/s a dozen or more.
const streamChanges = 6

// loop runs a cycle Debounce after each change (later while changes stream in and no
// eviction is in flight, see changeSpacing; never later than Period) and at least every
// Period.
func (s *Scheduler) loop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Period)
	defer tick.Stop()
	// edge fires when a reservation's window opens or closes, so a cycle runs then even
	// with nothing else changing and a Period longer than the wait.
	edge := time.NewTimer(time.Hour)
	defer edge.Stop()
	var last time.Duration
	var ended time.Time
	var seen uint64    // the cache's change count when the last cycle was called for
	streaming := false // streamChanges or more changes came from then to the cycle's end
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cache.changed:
			seen = s.cache.changes.Load()
			wait := s.cfg.Debounce
			if streaming && !s.evictionsInFlight() {
				wait = max(wait, time.Until(ended.Add(changeSpacing*last)))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(wait, s.cfg.Period)):
			}
		case <-tick.C:
			seen = s.cache.changes.Load()
		case <-edge.C:
			seen = s.cache.changes.Load()
		}
		last = s.cycle(ctx)
		ended = time.Now()
		s.armEdge(edge, ended)
		streaming = s.cache.changes.Load()-seen >= streamChanges
	}
}

// armEdge sets edge to fire at the next reservation window's start or end after now, or
// not before an hour from now when there is none (a Reservation's event wakes the loop
// through the cache, and the next cycle arms it again).
func (s *Scheduler) armEdge(edge *time.Timer, now time.Time) {
	wait := time.Hour
	if next := s.cache.nextReservationEdge(now); !next.IsZero() {
		wait = min(wait, next.Sub(now))
	}
	edge.Reset(wait)
}

// evictionsInFlight: some pod this scheduler evicted has not gone yet.
func (s *Scheduler) evictionsInFlight() bool {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return len(s.evicting) > 0
}

// cycle runs the core once on the current cache and carries out its decisions. It
// returns how long the snapshot and the core took.
func (s *Scheduler) cycle(ctx context.Context) time.Duration {
	began := time.Now()
	snap, blocked := s.snapshot(began)
	d := s.core.Schedule(snap)
	took := time.Since(began)
	s.metrics.observeCycle(took)
	s.apply(ctx, d, blocked, began)
	return took
}

// snapshot is the core's input for one cycle: the cache's objects, the core's tuning and
// the latest historical usage.
func (s *Scheduler) snapshot(now time.Time) (*bridge.Snapshot, []bridge.Pending) {
	snap, blocked := s.cache.snapshot(now)
	snap.Config = s.cfg.Core
	snap.Usage = s.usage.current()
	return snap, blocked
}
