// Package recorder writes every workload's life into the accounting ledger: it watches
// PodGroups (Slurm jobs and manifest workloads alike) and their pods, derives each job's
// record and state transitions from what the objects show (derive.go), and writes them
// idempotently. A job that is one bare pod is recorded from its pod alone until its
// PodGroup is written (implied.go), and a pending Slurm job kept in a submit batch from
// the batch until its PodGroup is created (batches.go). On start the informers list
// the whole cluster, so every group is derived and written again: the ledger keys
// transitions by (job, time, state), so a restart neither loses nor double-counts usage.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// DefaultFlushInterval is how often changes are written: one batch per interval keeps
// the ledger's write rate bounded however fast pods change.
const DefaultFlushInterval = 500 * time.Millisecond

// Config configures a Recorder.
type Config struct {
	Store      accounting.Store
	RESTConfig *rest.Config
	// Informers, when set, is the informer cache the recorder reads, shared with other
	// readers and run by the caller; its transform must keep what derive reads of Sluice's
	// pods and PodGroups and a node's capacity. The recorder's maps then point at the
	// cache's objects: nothing is held twice. When nil it runs informers of its own.
	Informers crcache.Informers
	// SchedulerName selects the pods that belong to Sluice's groups; "" means "sluice".
	SchedulerName string
	// FlushInterval batches writes; 0 means DefaultFlushInterval.
	FlushInterval time.Duration
	// Clock stamps changes whose objects carry no time (a requeue, a deleted group);
	// nil means time.Now.
	Clock func() time.Time
}

// Recorder watches the cluster and writes the ledger. Create it with New, run it with Run.
type Recorder struct {
	cfg    Config
	kube   client.Client // writes PodGroups' status.state and status.reason (podgroupstate.go)
	scheme *runtime.Scheme
	st     *state
	synced chan struct{}
	steps  stepLog
	// batches lists the submit batches (ReadSubmitBatches); nil: none are read.
	batches func() ([]*corev1.ConfigMap, error)
	// isStored tells whether a PodGroup exists (podGroupExists; tests replace it).
	isStored func(context.Context, client.ObjectKey) (bool, error)
}

// New checks the configuration; nothing talks to the API server until Run.
func New(cfg Config) (*Recorder, error) {
	if cfg.Store == nil {
		return nil, errors.New("recorder: no ledger store")
	}
	if cfg.RESTConfig == nil {
		return nil, errors.New("recorder: no Kubernetes REST config")
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = v1alpha1.DefaultSchedulerName
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	kube, err := client.New(cfg.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("recorder: Kubernetes client: %w", err)
	}
	r := &Recorder{cfg: cfg, kube: kube, scheme: scheme, st: newState(cfg.SchedulerName, cfg.Clock), synced: make(chan struct{})}
	r.isStored = r.podGroupExists
	return r, nil
}

// Synced is closed once the first pass over the whole cluster has been written: from
// then on the ledger holds every workload the cluster holds.
func (r *Recorder) Synced() <-chan struct{} { return r.synced }

// Run watches PodGroups, pods, nodes and Reservations and writes the ledger until ctx ends; the changes seen
// by then are written before it returns. It fails only when the informers cannot start.
func (r *Recorder) Run(ctx context.Context) error {
	informers := r.cfg.Informers
	var own crcache.Cache // the recorder's own informers, when it is given none
	if informers == nil {
		var err error
		if own, err = crcache.New(r.cfg.RESTConfig, crcache.Options{Scheme: r.scheme, DefaultTransform: slim}); err != nil {
			return fmt.Errorf("recorder: informers: %w", err)
		}
		informers = own
	}
	watches := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&v1alpha1.PodGroup{}, handler(r.st.setGroup, r.st.deleteGroup)},
		{&corev1.Pod{}, handler(r.st.setPod, r.st.deletePod)},
		{&corev1.Node{}, handler(r.st.setNode, r.st.deleteNode)},
		{&v1alpha1.Reservation{}, handler(r.st.setReservation, r.st.deleteReservation)},
	}
	var synced []toolscache.InformerSynced
	for _, w := range watches {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("recorder: informer for %T: %w", w.obj, err)
		}
		reg, err := inf.AddEventHandler(w.h)
		if err != nil {
			return fmt.Errorf("recorder: informer for %T: %w", w.obj, err)
		}
		synced = append(synced, reg.HasSynced)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cacheDone := make(chan error, 1)
	if own != nil {
		go func() { cacheDone <- own.Start(runCtx) }()
	} else {
		close(cacheDone) // the caller runs the shared cache
	}
	// The handlers' own sync: a shared cache may have synced long before they were added.
	if !toolscache.WaitForCacheSync(runCtx.Done(), synced...) {
		cancel()
		if err := <-cacheDone; err != nil {
			return fmt.Errorf("recorder: informers: %w", err)
		}
		return ctx.Err()
	}
	// Everything listed is dirty now: the first flush is the reconcile pass.
	for r.reconcile(ctx) != nil && ctx.Err() == nil {
		time.Sleep(r.cfg.FlushInterval)
	}
	close(r.synced)
	tick := time.NewTicker(r.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-cacheDone
			// The last changes seen are written with a fresh context: the caller's
			// has ended, and losing them would lose usage until the next start.
			final, stop := context.WithTimeout(context.Background(), 10*time.Second)
			defer stop()
			return r.flushLogged(final)
		case <-tick.C:
			_ = r.flushLogged(ctx)
		}
	}
}

// reconcile is the first pass: every workload and node the cluster holds, and the
// ledger's open nodes the cluster no longer has.
func (r *Recorder) reconcile(ctx context.Context) error {
	if err := r.writeNodes(ctx, true); err != nil {
		klog.FromContext(ctx).Error(err, "recording node capacity failed; retrying")
		return err
	}
	return r.flushLogged(ctx)
}

func (r *Recorder) flushLogged(ctx context.Context) error {
	r.readBatches(ctx)
	err := r.writeNodes(ctx, false)
	if err == nil {
		err = r.writeReservations(ctx)
	}
	if err == nil {
		err = r.flush(ctx)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "writing the accounting ledger failed; retrying")
	}
	return err
}

// flush derives every changed group and writes what differs from the last write.
func (r *Recorder) flush(ctx context.Context) error {
	work := r.confirmUnstored(ctx, decodeBatched(ctx, r.st.takeDirty()))
	if len(work) == 0 {
		return nil
	}
	if err := r.loadKnown(ctx, work); err != nil {
		r.st.requeue(work)
		return err
	}
	if err := r.steps.record(ctx, r.cfg.Store, work); err != nil {
		r.st.requeue(work)
		return err
	}
	now := r.cfg.Clock().UTC()
	var jobs []accounting.Job
	var ts []accounting.Transition
	var wrote []written
	for _, w := range work {
		prev := r.st.knownJob(w.id)
		j, jts := derive(w.pg, w.pods, prev, now)
		// A deleted workload not yet ended ends at its deletion; one that ended
		// before (in the ledger, though its pods went first and no longer show it)
		// keeps its end. A preempted one ended too: nothing requeues a deleted
		// workload (a bare pod evicted by a drain is deleted).
		if w.deleted && !j.State.Closed() && !finalIn(jts) && (prev == nil || prev.State != accounting.StatePreempted) {
			at, reason := now, "workload deleted"
			if d := w.pg.DeletionTimestamp; d != nil {
				at = d.Time
			}
			if w.unstored {
				reason = unstoredReason
			}
			jts = append(jts, accounting.Transition{JobID: j.JobID, At: at.UTC().Truncate(time.Second), State: accounting.StateCancelled, Reason: reason})
		}
		if err := validate(j, jts); err != nil {
			klog.FromContext(ctx).Error(err, "a workload cannot be recorded", "podGroup", w.key)
			continue
		}
		fp := fingerprint(j, jts)
		if !w.deleted && r.st.unchanged(j.JobID, fp) {
			continue
		}
		jobs, ts = append(jobs, j), append(ts, jts...)
		wrote = append(wrote, written{key: w.key, job: j, fp: fp, deleted: w.deleted, requeues: int(w.pg.Status.Requeues)})
	}
	r.writeStates(ctx, work, now)
	if len(jobs) == 0 {
		return nil
	}
	if err := r.cfg.Store.UpsertJobs(ctx, jobs); err != nil {
		r.st.requeue(work)
		return fmt.Errorf("record %d jobs: %w", len(jobs), err)
	}
	if err := r.cfg.Store.RecordTransitions(ctx, ts); err != nil {
		r.st.requeue(work)
		return fmt.Errorf("record %d transitions: %w", len(ts), err)
	}
	r.st.markWritten(wrote)
	return nil
}

// loadKnown reads, once per job per process, what the ledger already holds for the
// groups about to be derived: their allocation outlives their pods, and their requeue
// count says which requeues are recorded.
func (r *Recorder) loadKnown(ctx context.Context, work []groupWork) error {
	ids := r.st.unknownIDs(work)
	if len(ids) == 0 {
		return nil
	}
	// A new leader's first flush asks for every job waiting in the submit batches, tens
	// of thousands: the store splits a long list into queries it can run.
	jobs, err := r.cfg.Store.Jobs(ctx, accounting.JobFilter{JobIDs: ids})
	if err != nil {
		return fmt.Errorf("read recorded jobs: %w", err)
	}
	r.st.setKnown(ids, jobs)
	return nil
}

func finalIn(ts []accounting.Transition) bool {
	for _, t := range ts {
		if t.State.Final() {
			return true
		}
	}
	return false
}

func validate(j accounting.Job, ts []accounting.Transition) error {
	if err := j.Validate(); err != nil {
		return err
	}
	for _, t := range ts {
		if err := t.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// slim keeps the informers' caches small: nodes lose what the ledger does not read,
// everything loses its managed fields.
func slim(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		return slimNode(n), nil
	}
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// handler adapts typed callbacks to an informer handler; deletes of objects the informer
// lost track of are unwrapped.
func handler[T any](set func(T), del func(T)) toolscache.ResourceEventHandler {
	call := func(obj any, f func(T)) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if t, ok := obj.(T); ok {
			f(t)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(obj, set) },
		UpdateFunc: func(_, obj any) { call(obj, set) },
		DeleteFunc: func(obj any) { call(obj, del) },
	}
}
