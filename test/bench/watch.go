package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podWatch records, from a watch of one namespace, when want pods had been seen, bound
// and Running.
type podWatch struct {
	want   int
	cancel context.CancelFunc

	mu                    sync.Mutex
	seen, bound, running  map[string]bool
	podSeenAt, podBoundAt map[string]time.Time // per pod: first seen, first seen bound
	allSeen, allBound     chan struct{}
	allRunning            chan struct{}
	boundAt, runningAt    time.Time
}

func watchPods(ctx context.Context, kube kubernetes.Interface, ns string, want int) (*podWatch, error) {
	w := &podWatch{want: want, seen: map[string]bool{}, bound: map[string]bool{}, running: map[string]bool{},
		podSeenAt: map[string]time.Time{}, podBoundAt: map[string]time.Time{},
		allSeen: make(chan struct{}), allBound: make(chan struct{}), allRunning: make(chan struct{})}
	ctx, w.cancel = context.WithCancel(ctx)
	inf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)).Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.cancel()
		return nil, fmt.Errorf("pod watch of %s did not sync", ns)
	}
	return w, nil
}

func (w *podWatch) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen[pod.Name] {
		w.podSeenAt[pod.Name] = now
	}
	mark(w.seen, pod.Name, w.want, w.allSeen)
	if pod.Spec.NodeName != "" && !w.bound[pod.Name] {
		w.podBoundAt[pod.Name] = now
		if mark(w.bound, pod.Name, w.want, w.allBound) {
			w.boundAt = now
		}
	}
	if pod.Status.Phase == corev1.PodRunning && mark(w.running, pod.Name, w.want, w.allRunning) {
		w.runningAt = now
	}
}

// mark adds name to set and closes full when the set reaches want; it says whether
// this call closed it.
func mark(set map[string]bool, name string, want int, full chan struct{}) bool {
	if set[name] {
		return false
	}
	set[name] = true
	if len(set) == want {
		close(full)
		return true
	}
	return false
}

// waitSeen waits until every pod has been created.
func (w *podWatch) waitSeen(ctx context.Context) error {
	return w.await(ctx, w.allSeen, waitLimit, "created")
}

// wait waits until every pod is bound and Running and returns when each happened.
func (w *podWatch) wait(ctx context.Context, limit time.Duration) (bound, running time.Time, err error) {
	if err := w.await(ctx, w.allBound, limit, "bound"); err != nil {
		return bound, running, err
	}
	if err := w.await(ctx, w.allRunning, limit, "Running"); err != nil {
		return bound, running, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.boundAt, w.runningAt, nil
}

func (w *podWatch) await(ctx context.Context, done chan struct{}, limit time.Duration, what string) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		w.mu.Lock()
		defer w.mu.Unlock()
		return fmt.Errorf("after %s: %d of %d pods seen, %d bound, %d Running; waited for all %s",
			limit, len(w.seen), w.want, len(w.bound), len(w.running), what)
	}
}

// awaitBound waits until at least n pods have been seen bound. It checks as often as
// poll does; the times recorded come from the watch events, not from this loop.
func (w *podWatch) awaitBound(ctx context.Context, n int) error {
	return poll(ctx, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.bound) >= n
	})
}

func (w *podWatch) stop() { w.cancel() }

// bindLatency is the median, the 99th percentile and the slowest time from a pod's
// creation (as the watch saw it, or from since when later) to its binding: the
// scheduler's own delay, apart from how fast the pods could be created.
func (w *podWatch) bindLatency(since time.Time) (p50, p99, max time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	lat := make([]time.Duration, 0, len(w.podBoundAt))
	for name, at := range w.podBoundAt {
		from := w.podSeenAt[name]
		if from.Before(since) {
			from = since
		}
		lat = append(lat, at.Sub(from))
	}
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[(len(lat)*99)/100], lat[len(lat)-1]
}
