package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// dependents are the Slurm jobs whose --dependency names a job id, by that id, so a
// change of a manifest job (a pod of it ending, its group deleted) wakes just the jobs
// that wait on it: a Slurm job's end wakes every waiting job (wakeDependents), but
// manifest pods change far too often to list every PodGroup at each change.
type dependents map[uint32]map[client.ObjectKey]bool

// noteDependency indexes the Slurm job pg under the jobs its dependency names. An entry
// outlives the dependency (changed, met, or its job gone): waking a job that no longer
// waits costs one reconcile that changes nothing.
func (l *Lifecycle) noteDependency(pg *v1alpha1.PodGroup) {
	s := pg.Spec.Slurm
	if s == nil || s.Dependency == "" || jobstate.PhaseFinal(pg.Status.Phase) {
		return
	}
	deps, err := sbatch.ParseDependency(s.Dependency)
	if err != nil {
		return // judged never satisfiable when reconciled; nothing to wait on
	}
	key := client.ObjectKeyFromObject(pg)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range deps.List {
		for _, id := range d.Jobs {
			if l.waiting[uint32(id)] == nil {
				l.waiting[uint32(id)] = map[client.ObjectKey]bool{}
			}
			l.waiting[uint32(id)][key] = true
		}
	}
}

// wakeWaitingOn queues the Slurm jobs whose dependency names job id.
func (l *Lifecycle) wakeWaitingOn(id uint32) {
	if id == 0 {
		return
	}
	l.mu.Lock()
	var keys []client.ObjectKey
	for k := range l.waiting[id] {
		keys = append(keys, k)
	}
	l.mu.Unlock()
	for _, k := range keys {
		l.queue.Add(k)
	}
}

// groupGone wakes the jobs waiting on a deleted group's job: a job that no longer exists
// can never satisfy them.
func (l *Lifecycle) groupGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pg, ok := obj.(*v1alpha1.PodGroup); ok {
		l.wakeWaitingOn(v1alpha1.JobIDOf(pg.Labels))
	}
}

// manifestPodChanged wakes the jobs waiting on the job a manifest pod belongs to: its
// pods decide its state (jobstate). A pod carries its job id when it is the job (a bare
// pod); a workload's pod names its group, which carries the id.
func (l *Lifecycle) manifestPodChanged(p *corev1.Pod) {
	l.mu.Lock()
	none := len(l.waiting) == 0
	l.mu.Unlock()
	if none {
		return
	}
	if id := v1alpha1.JobIDOf(p.Labels); id != 0 {
		l.wakeWaitingOn(id)
		return
	}
	name := p.Annotations[v1alpha1.PodGroupAnnotation]
	if name == "" {
		return
	}
	var pg v1alpha1.PodGroup
	if err := l.cache.Get(context.Background(), client.ObjectKey{Namespace: p.Namespace, Name: name}, &pg); err == nil {
		l.wakeWaitingOn(v1alpha1.JobIDOf(pg.Labels))
	}
}
