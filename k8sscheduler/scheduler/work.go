package scheduler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// bindWork binds one pod through the pods/binding subresource. The GPU assignment rides
// on the Binding's annotations, which the API server copies onto the pod in the same
// write; mps says the node enforces a share's limits (mps.go).
func (s *Scheduler) bindWork(ns string, b bridge.Bind, mps bool) func(context.Context) {
	return func(ctx context.Context) {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: b.Task, Namespace: ns},
			Target:     corev1.ObjectReference{Kind: "Node", Name: b.Node},
		}
		if a, ok := assignmentOf(&b); ok {
			a.MPS = mps
			binding.Annotations = assignmentAnnotations(a)
		}
		claims, err := s.bindClaims(ctx, ns, b, binding)
		if err != nil {
			s.metrics.bindsFailed.Inc()
			s.forget(b.Job, b.Task)
			return
		}
		err = s.kube.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{})
		if err != nil {
			s.metrics.bindsFailed.Inc()
			klog.FromContext(ctx).V(2).Info("bind failed; retrying next cycle", "pod", ns+"/"+b.Task, "node", b.Node, "err", err)
			if claims != nil {
				s.unreserve(ctx, claims, claims.consumer)
			}
			s.forget(b.Job, b.Task)
			return
		}
		s.metrics.podsBound.Inc()
	}
}

// createWork makes a pod-less group's pods through the PodFactory and creates them
// already bound (one write each). If any create fails, the ones made are deleted and the
// group is placed again next cycle. mps says, per bind, whether its node enforces a
// share's limits.
func (s *Scheduler) createWork(g *groupEntry, pg *v1alpha1.PodGroup, binds []bridge.Bind, mps []bool) func(context.Context) {
	return func(ctx context.Context) {
		if jobstate.IsBatched(pg) { // a job read from its submit batch: stored as it starts
			stored, err := s.writeImplied(ctx, pg.DeepCopy())
			if err != nil {
				s.createFailed(ctx, g, pg, binds, nil, fmt.Errorf("store the job's PodGroup: %w", err))
				return
			}
			pg = stored
		}
		pg, err := s.setRunPartition(ctx, pg, binds) // placement_alternatives.go
		if err != nil {
			s.createFailed(ctx, g, pg, binds, nil, err)
			return
		}
		pods, err := s.factory.Pods(pg, binds)
		if err == nil && len(pods) != len(binds) {
			err = fmt.Errorf("the pod factory made %d pods for %d binds", len(pods), len(binds))
		}
		if err != nil {
			s.createFailed(ctx, g, pg, binds, nil, err)
			return
		}
		s.rekey(g, binds, pods)
		var made []*corev1.Pod
		for i, pod := range pods {
			prepareSlurmPod(pod, pg, &binds[i], s.cfg.SchedulerName, mps[i])
			created, err := s.kube.CoreV1().Pods(pg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				s.metrics.bindsFailed.Inc()
				s.createFailed(ctx, g, pg, binds, made, err)
				return
			}
			made = append(made, created)
			if err := s.claimForSlurmPod(ctx, created, binds[i].Node); err != nil {
				s.metrics.bindsFailed.Inc()
				s.createFailed(ctx, g, pg, binds, made, err)
				return
			}
			s.metrics.podsBound.Inc()
		}
		s.cache.mu.Lock()
		g.retry = nil
		s.cache.mu.Unlock()
	}
}

// prepareSlurmPod sets what makes a factory's pod ours and bound: node, scheduler name,
// group annotations and the GPU assignment, and the MPS limits of a shared GPU on an MPS
// node.
func prepareSlurmPod(pod *corev1.Pod, pg *v1alpha1.PodGroup, b *bridge.Bind, schedulerName string, mps bool) {
	pod.Namespace = pg.Namespace
	pod.Spec.NodeName = b.Node
	pod.Spec.SchedulerName = schedulerName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[v1alpha1.PodGroupAnnotation] = pg.Name
	pod.Annotations[v1alpha1.TaskGroupAnnotation] = b.Group
	if a, ok := assignmentOf(b); ok && len(pod.Spec.ResourceClaims) == 0 { // claimed GPUs: claimForSlurmPod
		a.MPS = mps
		for k, v := range assignmentAnnotations(a) {
			pod.Annotations[k] = v
		}
		addMPSEnv(pod, mpsLimits(a))
	}
}

// rekey moves a Slurm group's assumed binds from the core's task names to the names of
// the pods about to be created, so the informer's view of them replaces the assumption.
func (s *Scheduler) rekey(g *groupEntry, binds []bridge.Bind, pods []*corev1.Pod) {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range binds {
		g.unassume(b.Task)
		if g.assumed == nil {
			g.assumed = map[string]bridge.Bind{}
		}
		b.Task = pods[i].Name
		g.assumed[b.Task] = b
	}
	g.dirty = true
}

func (s *Scheduler) createFailed(ctx context.Context, g *groupEntry, pg *v1alpha1.PodGroup, binds []bridge.Bind, made []*corev1.Pod, err error) {
	klog.FromContext(ctx).Info("creating a Slurm job's pods failed; trying again after a wait", "podGroup", g.key, "err", err)
	for _, p := range made {
		zero := int64(0)
		if derr := s.kube.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); derr != nil && !apierrors.IsNotFound(derr) {
			klog.FromContext(ctx).Error(derr, "removing a partly created Slurm job", "pod", p.Namespace+"/"+p.Name)
		}
	}
	c := s.cache
	c.mu.Lock()
	g.created, g.assumed, g.dirty = false, nil, true
	g.status.createErr = err.Error()
	wait := g.backOffCreate(err, time.Now())
	c.mu.Unlock()
	s.events.Eventf(pg, corev1.EventTypeWarning, v1alpha1.ReasonPodCreateFailed, "creating the job's pods failed: %v; next try in %s", err, wait)
	time.AfterFunc(wait, func() {
		c.mu.Lock()
		g.dirty = true
		c.mu.Unlock()
		c.poke()
	})
}

// evictWork evicts one pod through the Eviction API (so PodDisruptionBudgets hold) and
// tells its owner why in an Event on the pod.
func (s *Scheduler) evictWork(ns, name string, uid types.UID, e bridge.Eviction) func(context.Context) {
	return func(ctx context.Context) {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		err := s.kube.PolicyV1().Evictions(ns).Evict(ctx, ev)
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Info("eviction refused; retrying next cycle", "pod", ns+"/"+name, "err", err)
			s.cache.mu.Lock()
			delete(s.evicting, ns+"/"+name)
			s.cache.mu.Unlock()
			return
		}
		s.metrics.evictions.WithLabelValues(string(e.Kind)).Inc()
		ref := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid}}
		s.events.Eventf(ref, corev1.EventTypeWarning, "Evicted", "evicted by %s (%s%s): %s", s.cfg.SchedulerName, e.Kind, forJob(e.ForJob), e.Reason)
	}
}

// yieldWork deletes an idle-node validation pod (only that pod: the UID must match) and
// says for which job in an Event on it; the remediation controller records the validation
// as preempted, not failed.
func (s *Scheduler) yieldWork(ns, name string, uid types.UID, y bridge.Yield) func(context.Context) {
	return func(ctx context.Context) {
		err := s.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Info("removing an idle-node validation failed; retrying next cycle", "pod", ns+"/"+name, "err", err)
			s.cache.mu.Lock()
			delete(s.evicting, ns+"/"+name)
			s.cache.mu.Unlock()
			return
		}
		ref := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid}}
		s.events.Eventf(ref, corev1.EventTypeNormal, "ValidationPreempted", "node %s taken by %s for job %s", y.Node, s.cfg.SchedulerName, y.ForJob)
	}
}

func forJob(job string) string {
	if job == "" {
		return ""
	}
	return " for " + job
}
