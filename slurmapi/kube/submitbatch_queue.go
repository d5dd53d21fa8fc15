package kube

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// SubmitQueue turns batches of submitted jobs into PodGroups: it creates
// each batch's jobs in id order, several creates in flight, and removes
// the batch once all of them exist. A create that finds the PodGroup
// there counts as done, so a queue restarted midway (or a scancel that
// created a job early) creates no job twice. Run it on the leader.
type SubmitQueue struct {
	c         client.WithWatch
	namespace string
	workers   int
	// retry is the pause after a failed pass before the next.
	retry time.Duration
	// batches and groups, when set (KeepPending), keep pending jobs in their batches
	// (submitbatch_keep.go).
	batches func() ([]*corev1.ConfigMap, error)
	groups  client.Reader
	decoded map[types.UID][]keptJob // by batch: its jobs, decoded once (keptJobs)
}

// NewSubmitQueue connects a queue to the batches of opts.Namespace in the
// cluster of cfg (the namespace and workers as the Backend's Options).
func NewSubmitQueue(cfg *rest.Config, opts Options) (*SubmitQueue, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Namespace == "" {
		opts.Namespace = "sluice-system"
	}
	workers := opts.MaterializeWorkers
	if workers <= 0 {
		workers = 8
	}
	return &SubmitQueue{c: c, namespace: opts.Namespace, workers: workers, retry: time.Second}, nil
}

// Run materializes batches until ctx ends: every batch there, then each
// new one as a watch reports it.
func (q *SubmitQueue) Run(ctx context.Context) error {
	if q.batches != nil {
		return q.runKeeping(ctx)
	}
	for ctx.Err() == nil {
		rv, err := q.drain(ctx)
		if err != nil {
			klog.FromContext(ctx).Info("submit queue: batches wait for the next pass", "err", err)
			sleep(ctx, q.retry)
			continue
		}
		q.waitForBatch(ctx, rv)
	}
	return nil
}

// drain materializes the batches there now, lowest ids first, so a job is
// created after the jobs submitted before it (a --dependency names an
// earlier job). A batch whose job cannot be created yet (its namespace's
// quota is full, the API server is briefly away) stays for the next pass
// without holding up the batches after it. It returns the list's
// resourceVersion to watch from.
func (q *SubmitQueue) drain(ctx context.Context) (string, error) {
	var list corev1.ConfigMapList
	if err := q.c.List(ctx, &list, client.InNamespace(q.namespace), client.HasLabels{SubmitBatchLabel}); err != nil {
		return "", fmt.Errorf("list submitted job batches: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int { return int(lowestID(&a)) - int(lowestID(&b)) })
	var first error
	for i := range list.Items {
		if err := q.materializeBatch(ctx, &list.Items[i]); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return "", first
	}
	if len(list.Items) > 0 {
		return "", nil // list again: batches stored meanwhile were not in this list
	}
	return list.ResourceVersion, nil
}

// waitForBatch returns when a batch is added after resourceVersion rv, the
// watch ends, or at once when rv is empty.
func (q *SubmitQueue) waitForBatch(ctx context.Context, rv string) {
	if rv == "" {
		return
	}
	timeout := int64(60)
	w, err := q.c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(q.namespace), client.HasLabels{SubmitBatchLabel},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout, AllowWatchBookmarks: false}})
	if err != nil {
		klog.FromContext(ctx).Info("submit queue: watching batches failed, listing again shortly", "err", err)
		sleep(ctx, q.retry)
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added || ev.Type == watch.Error {
			return
		}
	}
}

// materializeBatch creates the PodGroups of one batch, then removes it.
func (q *SubmitQueue) materializeBatch(ctx context.Context, cm *corev1.ConfigMap) error {
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(jobKey(a)) - int(jobKey(b)) })
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, q.workers)
	)
	for _, key := range keys {
		pg, err := jobstate.BatchedPodGroup(cm, key)
		if err != nil {
			// Can never be created as it is: kept as a failed job, and said.
			if err := q.refuse(ctx, cm, key, nil, err); err != nil && first == nil {
				first = err
			}
			continue
		}
		if pg.Spec.Slurm != nil && pg.Spec.Slurm.Dependency != "" {
			wg.Wait() // the jobs it may name exist before it does
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := q.create(ctx, cm, key, pg); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first // the batch stays; the next pass finds the created jobs there
	}
	uid, rv := cm.UID, cm.ResourceVersion
	err := q.c.Delete(ctx, cm, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove materialized batch %s: %w", cm.Name, err)
	}
	return nil
}

// create stores one batched job's PodGroup; already there is done. A job
// the API server refuses can never be created as it is: it is kept as a
// failed job (submitbatch_failed.go) and reported. Any other error is
// transient: the batch stays, its jobs stay visible, the next pass retries.
func (q *SubmitQueue) create(ctx context.Context, cm *corev1.ConfigMap, key string, pg *v1alpha1.PodGroup) error {
	err := q.c.Create(ctx, pg.DeepCopy())
	if apierrors.IsNotFound(err) { // its namespace went away since the submission
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pg.Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "sluice"}}}
		if err := q.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s for job %s: %w", pg.Namespace, key, err)
		}
		err = q.c.Create(ctx, pg.DeepCopy())
	}
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err):
		return q.refuse(ctx, cm, key, pg, err)
	}
	return fmt.Errorf("create PodGroup of job %s from batch %s: %w", key, cm.Name, err)
}

// refuse keeps a batched job that cannot become its PodGroup as a failed
// job and reports it with a Warning Event on its batch and in the log.
func (q *SubmitQueue) refuse(ctx context.Context, cm *corev1.ConfigMap, key string, pg *v1alpha1.PodGroup, why error) error {
	klog.FromContext(ctx).Error(why, "submit queue: the cluster refused a batched job; it is kept as FAILED", "batch", cm.Name, "job", key)
	if err := q.keepFailed(ctx, cm.Namespace, key, pg, why); err != nil {
		return err
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: cm.Name + "-", Namespace: cm.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID},
		Type:           corev1.EventTypeWarning, Reason: "JobRefused",
		Message:        printable(fmt.Sprintf("job %s was acknowledged but the cluster refused its PodGroup; it is kept as FAILED: %v", key, why), 1024),
		Source:         corev1.EventSource{Component: "sluice-submit-queue"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := q.c.Create(ctx, ev); err != nil {
		klog.FromContext(ctx).Error(err, "submit queue: recording the refusal failed", "batch", cm.Name, "job", key)
	}
	return nil
}

// lowestID is the lowest job id in batch cm.
func lowestID(cm *corev1.ConfigMap) uint32 {
	low := uint32(1<<32 - 1)
	for k := range cm.Data {
		low = min(low, jobKey(k))
	}
	return low
}

// jobKey reads a batch's data key as the job id it is.
func jobKey(k string) uint32 {
	id, _ := v1alpha1.ParseJobID(k)
	return id
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
