package scheduler

import (
	"context"
	"errors"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Pending Slurm jobs are read from the Slurm API's submit batches (v1alpha1.SubmitBatchLabel):
// one ConfigMap holds the jobs acknowledged together, each as the PodGroup it becomes. A
// batched job is a group whose PodGroup is not stored (no resourceVersion): the scheduler
// places it like any Slurm job, writes no status for it while it waits (it has no object
// to write to, which is the point: a pending job costs the API server nothing but its
// share of one batch write), and creates its PodGroup when it starts, just before its pods
// (createWork), or when the status pass has something to say of a started job. Once the
// PodGroup is stored, the informer's copy replaces the batched one, and the batch's copy is
// never used again for that job in this process, even if the PodGroup is deleted.

// batchInformer watches the batches in namespace ns; its handlers keep the cache's
// batched groups current.
func (s *Scheduler) batchInformer(ns string) toolscache.SharedIndexInformer {
	selector := v1alpha1.SubmitBatchLabel
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return s.kube.CoreV1().ConfigMaps(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return s.kube.CoreV1().ConfigMaps(ns).Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	_ = inf.SetTransform(func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			cm.ManagedFields = nil
		}
		return obj, nil
	})
	return inf
}

// SubmitBatches lists the submit batches as the scheduler has read them, for the submit
// queue, which removes a batch once every job of it is stored. It fails until the
// scheduler runs and has listed them, and without Config.SubmitBatchNamespace.
func (s *Scheduler) SubmitBatches() ([]*corev1.ConfigMap, error) {
	if s.batchInf == nil || !s.batchInf.HasSynced() {
		return nil, errors.New("the scheduler has not read the submit batches yet")
	}
	objs := s.batchInf.GetStore().List()
	out := make([]*corev1.ConfigMap, 0, len(objs))
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			out = append(out, cm)
		}
	}
	return out, nil
}

// batchHandlers decode each batch once, when it is added or its jobs change; an update
// of its annotations alone (the scheduler's own pending reasons, batchreasons.go) is not
// decoded again.
func (s *Scheduler) batchHandlers() toolscache.ResourceEventHandler {
	h := s.batchDecoders()
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { h.OnAdd(obj, false) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*corev1.ConfigMap); ok {
				if n, ok := obj.(*corev1.ConfigMap); ok && maps.Equal(o.Data, n.Data) {
					return
				}
			}
			h.OnUpdate(old, obj)
		},
		DeleteFunc: h.OnDelete,
	}
}

func (s *Scheduler) batchDecoders() toolscache.ResourceEventHandler {
	return handler(func(cm *corev1.ConfigMap) {
		byID, errs := jobstate.BatchedJobs(cm)
		for _, err := range errs {
			s.log.Info("a batched job does not decode; the submit queue reports it", "err", err)
		}
		jobs := make([]*v1alpha1.PodGroup, 0, len(byID))
		for _, pg := range byID {
			jobs = append(jobs, pg)
		}
		s.cache.setBatch(cm.Name, jobs)
	}, func(cm *corev1.ConfigMap) { s.cache.setBatch(cm.Name, nil) })
}

// setBatch records the jobs batch name holds now (none: the batch is gone). A job whose
// PodGroup was ever stored is not taken from a batch again; one the batch no longer holds
// is dropped unless it was stored meanwhile.
func (c *cache) setBatch(name string, jobs []*v1alpha1.PodGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches == nil {
		c.batches = map[string]map[string]bool{}
	}
	now := make(map[string]bool, len(jobs))
	for _, pg := range jobs {
		key := pg.Namespace + "/" + pg.Name
		now[key] = true
		g := c.group(key)
		if g.stored || g.pg != nil {
			if g.batch == "" {
				g.batch = name // a stored job's tombstone lives while the batch holds it
			}
			continue // stored, or another batch holds it (a retried submission)
		}
		g.pg, g.batch, g.dirty = pg, name, true
		c.poke()
	}
	for key := range c.batches[name] {
		if now[key] {
			continue
		}
		g := c.groups[key]
		if g == nil || g.batch != name {
			continue
		}
		g.batch = ""
		if !g.stored {
			g.pg, g.dirty = nil, true
			c.poke()
		}
		if g.pg == nil && g.pods.len() == 0 && len(g.assumed) == 0 {
			c.removeGroup(g)
		}
	}
	if len(now) == 0 {
		delete(c.batches, name)
	} else {
		c.batches[name] = now
	}
}

// batched reports whether the group's PodGroup is a batch's copy, not stored.
func (g *groupEntry) batched() bool { return g.pg != nil && g.batch != "" && !g.stored }
