package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Lifecycle ends Slurm jobs as their pods do: it watches Slurm PodGroups
// and their pods and writes the status the REST views read (phase, nodes,
// exit code, end time). It enforces time limits itself, since not every
// node agent (kwok) honours activeDeadlineSeconds, and requeues --requeue
// jobs whose pods were preempted or lost with their node. Run it on the
// leader only: two would race on the same status.
type Lifecycle struct {
	cache  cache.Cache
	shared bool // the cache is the caller's, which runs it
	client client.Client
	queue  workqueue.TypedRateLimitingInterface[client.ObjectKey]
	now    func() time.Time

	// ids gives array tasks their job ids as they are split off (WithJobIDs).
	ids *JobIDs

	// deps is where the jobs a --dependency names are read: the shared cache, which
	// holds every pod and PodGroup; without one, the API server (an own cache holds only
	// Slurm jobs' pods, and a dependency may name a manifest job).
	deps client.Reader

	mu        sync.Mutex
	disrupted map[client.ObjectKey]disruptedPod // noted from pods that may be gone by the time of the reconcile
	waiting   dependents                        // pending jobs by the job ids their dependency names
	// lostWithNode: manifest (batch/v1 Job) groups a pod of which was lost with its node
	// (jobend.go), noted from pods that may be gone by the time of the reconcile.
	lostWithNode map[client.ObjectKey]bool
}

// disruptedPod is a disruption seen on one pod; it counts only against
// the run the pod belonged to, not a later run after a requeue.
type disruptedPod struct {
	why   jobstate.State // jobstate.Disruption of the pod
	pod   string
	index string // NodeIndexLabel
}

// NewLifecycle connects a lifecycle controller to the cluster of cfg. shared, when not
// nil, is the informer cache it reads (PodGroups, Partitions, pods), run by the caller
// and shared with other readers (the server's); when nil it runs a cache of its own,
// holding only Slurm jobs' pods.
func NewLifecycle(cfg *rest.Config, shared cache.Cache) (*Lifecycle, error) {
	c := shared
	if c == nil {
		var err error
		if c, err = ownCache(cfg); err != nil {
			return nil, err
		}
	}
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	var deps client.Reader = cl
	if shared != nil {
		deps = shared
	}
	return &Lifecycle{
		cache: c, shared: shared != nil, client: cl, deps: deps, now: time.Now,
		disrupted: map[client.ObjectKey]disruptedPod{}, waiting: dependents{}, lostWithNode: map[client.ObjectKey]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[client.ObjectKey](),
			workqueue.TypedRateLimitingQueueConfig[client.ObjectKey]{Name: "slurm-lifecycle"}),
	}, nil
}

// ownCache is the lifecycle's informer cache when it shares none.
func ownCache(cfg *rest.Config) (cache.Cache, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	withJobID, err := labels.NewRequirement(v1alpha1.JobIDLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		// Only Slurm jobs' pods: everything else in the cluster stays out of memory.
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*withJobID, mustRequirement(SlurmPodLabel, selection.Equals, "true"))},
	}})
	if err != nil {
		return nil, fmt.Errorf("informer cache: %w", err)
	}
	return c, nil
}

func mustRequirement(key string, op selection.Operator, value string) labels.Requirement {
	r, err := labels.NewRequirement(key, op, []string{value})
	if err != nil {
		panic(err) // constant arguments
	}
	return *r
}

// Run watches until ctx ends.
func (l *Lifecycle) Run(ctx context.Context) error {
	defer l.queue.ShutDown()
	pgInf, err := l.cache.GetInformer(ctx, &v1alpha1.PodGroup{})
	if err != nil {
		return err
	}
	podInf, err := l.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	pgReg, err := pgInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: l.groupChanged,
		UpdateFunc: func(old, o any) {
			l.groupChanged(o)
			if jobEnded(old, o) {
				l.wakeDependents(ctx)
			}
		},
		DeleteFunc: l.groupGone,
	})
	if err != nil {
		return err
	}
	podReg, err := podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    l.podChanged,
		UpdateFunc: func(_, o any) { l.podChanged(o) },
		DeleteFunc: l.podChanged,
	})
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	if !l.shared {
		go func() { errc <- l.cache.Start(ctx) }()
	}
	// The handlers' own sync: a shared cache may have synced before they were added.
	if !toolscache.WaitForCacheSync(ctx.Done(), pgReg.HasSynced, podReg.HasSynced) {
		return fmt.Errorf("slurm lifecycle: informers did not sync: %w", ctx.Err())
	}
	for range 2 {
		go l.work(ctx)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// jobEnded reports whether a PodGroup update is its job's end.
func jobEnded(old, cur any) bool {
	o, ok1 := old.(*v1alpha1.PodGroup)
	n, ok2 := cur.(*v1alpha1.PodGroup)
	return ok1 && ok2 && n.Spec.Slurm != nil && !jobstate.PhaseFinal(o.Status.Phase) && jobstate.PhaseFinal(n.Status.Phase)
}

func (l *Lifecycle) groupChanged(obj any) {
	pg, ok := obj.(*v1alpha1.PodGroup)
	if !ok {
		return
	}
	if pg.Spec.Slurm == nil {
		// A manifest job's group changed (written, its state, its deletion): a
		// Slurm job that depends on it is judged again.
		l.wakeWaitingOn(v1alpha1.JobIDOf(pg.Labels))
		return
	}
	l.noteDependency(pg)
	l.queue.Add(client.ObjectKeyFromObject(pg))
	if record, ok := arrayRecordOf(pg); ok {
		l.queue.Add(record)
	}
}

// podChanged queues the pod's job and notes a disruption while the pod
// still shows it: the pod may be gone when the job is looked at.
func (l *Lifecycle) podChanged(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if ok && pod.Labels[SlurmPodLabel] != "true" {
		l.manifestPodChanged(pod)
		l.jobPodDeleted(pod)
		return
	}
	if !ok || pod.Labels[v1alpha1.JobIDLabel] == "" {
		return // a shared cache holds every pod; only Slurm jobs' are this controller's
	}
	name := pod.Annotations[v1alpha1.PodGroupAnnotation]
	if name == "" {
		return // not (yet) created by the scheduler for a job
	}
	key := client.ObjectKey{Namespace: pod.Namespace, Name: name}
	// A job that ended is not done for its dependents until its pods are (COMPLETING).
	l.wakeWaitingOn(v1alpha1.JobIDOf(pod.Labels))
	if d := jobstate.Disruption(pod); d != "" {
		l.mu.Lock()
		l.disrupted[key] = disruptedPod{why: d, pod: pod.Name, index: pod.Labels[NodeIndexLabel]}
		l.mu.Unlock()
	}
	l.queue.Add(key)
}

func (l *Lifecycle) work(ctx context.Context) {
	for {
		key, quit := l.queue.Get()
		if quit {
			return
		}
		again, err := l.reconcile(ctx, key)
		switch {
		case err != nil:
			klog.FromContext(ctx).Info("slurm lifecycle: retrying", "podGroup", key, "err", err)
			l.queue.AddRateLimited(key)
		case again > 0:
			l.queue.Forget(key)
			l.queue.AddAfter(key, again)
		default:
			l.queue.Forget(key)
		}
		l.queue.Done(key)
	}
}

// reconcile applies the job's verdict; it returns when to look again (a
// time limit running out).
func (l *Lifecycle) reconcile(ctx context.Context, key client.ObjectKey) (time.Duration, error) {
	var pg v1alpha1.PodGroup
	if err := l.cache.Get(ctx, key, &pg); err != nil {
		if apierrors.IsNotFound(err) {
			l.forgetDisruption(key)
			l.forgetLostWithNode(key)
			return 0, nil
		}
		return 0, err
	}
	if pg.Spec.Slurm == nil {
		return 0, l.endFailedJob(ctx, &pg)
	}
	switch {
	case arrayRecord(&pg):
		return l.splitArray(ctx, &pg)
	case waitsForBegin(&pg):
		return l.releaseAtBegin(ctx, &pg)
	}
	var list corev1.PodList
	if err := l.cache.List(ctx, &list, client.InNamespace(pg.Namespace),
		client.MatchingLabels{v1alpha1.JobIDLabel: pg.Labels[v1alpha1.JobIDLabel]}); err != nil {
		return 0, err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	if (pg.Status.Phase == "" || pg.Status.Phase == v1alpha1.PodGroupPending) && len(currentRun(&pg, pods)) == 0 {
		return 0, l.markEligibility(ctx, &pg)
	}
	limit, err := l.timeLimit(ctx, &pg)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	noted := l.disrupted[key]
	l.mu.Unlock()
	var seen jobstate.State
	if i, err := v1alpha1.ParseNodeIndex(noted.index); err == nil && noted.pod == PodName(&pg, i) && !jobstate.PhaseFinal(pg.Status.Phase) {
		seen = noted.why // a pod of this run was disrupted and may be gone already
	}
	v := judge(&pg, pods, seen, limit, l.now())
	if err := l.apply(ctx, &pg, v); err != nil {
		return 0, err
	}
	if v.requeue || jobstate.PhaseFinal(v.phase) {
		l.forgetDisruption(key)
	}
	return v.recheckIn, nil
}

func (l *Lifecycle) forgetDisruption(key client.ObjectKey) {
	l.mu.Lock()
	delete(l.disrupted, key)
	l.mu.Unlock()
}

// timeLimit is the job's, else its partition's default, else none.
func (l *Lifecycle) timeLimit(ctx context.Context, pg *v1alpha1.PodGroup) (time.Duration, error) {
	if t := pg.Spec.Slurm.TimeLimit; t != nil {
		return t.Duration, nil
	}
	if pg.Spec.Partition == "" {
		return 0, nil
	}
	var p v1alpha1.Partition
	if err := l.cache.Get(ctx, client.ObjectKey{Name: pg.Spec.Partition}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	if p.Spec.DefaultTime == nil {
		return 0, nil
	}
	return p.Spec.DefaultTime.Duration, nil
}

// apply writes the verdict: the status first (guarded by the version read,
// so a concurrent scancel or requeue wins and this one is retried on fresh
// state), then the pods' deletion.
func (l *Lifecycle) apply(ctx context.Context, pg *v1alpha1.PodGroup, v verdict) error {
	if v.requeue || v.phase != "" || v.nodes != nil {
		err := jobstate.WriteStatus(ctx, l.client.Status(), pg, func(st *v1alpha1.PodGroupStatus) {
			switch {
			case v.requeue:
				jobstate.MarkRequeued(st, l.now())
			case v.phase != "":
				// the scheduler counted its pods when it started them; MarkEnded clears that
				jobstate.MarkEnded(st, v.phase, v.endTime)
				st.ExitCode, st.EndReason = v.exitCode, v.endReason
				if st.StartTime == nil {
					st.StartTime = st.EndTime
				}
			}
			if v.nodes != nil {
				st.Nodes = v.nodes
			}
		})
		if err != nil {
			return fmt.Errorf("write status of job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
		}
	}
	if !v.deletePods {
		return nil
	}
	// The pods' own grace period applies: a task gets SIGTERM, then
	// SIGKILL, as Slurm's KillWait gives it. A job that ended keeps the
	// pods that ended with it (as a succeeded job does): the batch host's
	// step report and a failed task's log are read from them. A requeue
	// clears the old run whole.
	opts := []client.DeleteAllOfOption{client.InNamespace(pg.Namespace),
		client.MatchingLabels{v1alpha1.JobIDLabel: pg.Labels[v1alpha1.JobIDLabel], SlurmPodLabel: "true"}}
	if !v.requeue {
		opts = append(opts, client.MatchingFieldsSelector{Selector: fields.AndSelectors(
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))})
	}
	err := l.client.DeleteAllOf(ctx, &corev1.Pod{}, opts...)
	if err != nil {
		return fmt.Errorf("delete pods of job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	return nil
}
