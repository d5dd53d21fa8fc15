package scheduler

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/bridge"
)

// bindOrParkLocked is the work of one bind: at once for whole GPUs, or once the
// reservations of its shared GPUs have reported their devices. Called with c.mu held.
func (s *Scheduler) bindOrParkLocked(job, ns string, b bridge.Bind) []func(context.Context) {
	if !sharedBind(&b) {
		return []func(context.Context){s.bindWork(ns, b, false)}
	}
	out, ready, work := s.reservedBindsLocked([]bridge.Bind{b})
	if ready {
		return append(work, s.bindWork(ns, out[0], s.cache.mpsNodeLocked(b.Node)))
	}
	s.parked = append(s.parked, parkedBinds{job: job, binds: []bridge.Bind{b}})
	return work
}

// createOrParkLocked is bindOrParkLocked for a pod-less (Slurm) group's creates: all of
// its pods wait for the devices of all its shared GPUs.
func (s *Scheduler) createOrParkLocked(g *groupEntry, binds []bridge.Bind) []func(context.Context) {
	out, ready, work := s.reservedBindsLocked(binds)
	if ready {
		return append(work, s.createWork(g, g.pg, out, s.cache.mpsNodesLocked(out)))
	}
	s.parked = append(s.parked, parkedBinds{job: g.key, binds: binds, create: true})
	return work
}

// releaseParkedLocked sends the parked binds whose devices are now known, and gives back
// to the core those whose reservation the kubelet refused or whose task was forgotten.
func (s *Scheduler) releaseParkedLocked() []func(context.Context) {
	c := s.cache
	var jobs []func(context.Context)
	keep := s.parked[:0]
	for _, p := range s.parked {
		g := c.groups[p.job]
		if g == nil || g.podGroup() == nil || !stillAssumed(g, p.binds) {
			continue // the task went or its bind was dropped: the core places it again
		}
		if s.reservationFailedLocked(p.binds) {
			for _, b := range p.binds {
				g.unassume(b.Task)
			}
			if p.create {
				g.created = false
			}
			g.dirty = true
			c.poke()
			continue
		}
		out, ready, work := s.reservedBindsLocked(p.binds)
		jobs = append(jobs, work...)
		switch {
		case !ready:
			keep = append(keep, p)
		case p.create:
			jobs = append(jobs, s.createWork(g, g.podGroup(), out, c.mpsNodesLocked(out)))
		default:
			jobs = append(jobs, s.bindWork(namespaceOf(p.job), out[0], c.mpsNodeLocked(out[0].Node)))
		}
	}
	clear(s.parked[len(keep):])
	s.parked = keep
	return jobs
}

func stillAssumed(g *groupEntry, binds []bridge.Bind) bool {
	for _, b := range binds {
		if a, ok := g.assumed[b.Task]; !ok || a.Node != b.Node {
			return false
		}
	}
	return true
}

func (s *Scheduler) reservationFailedLocked(binds []bridge.Bind) bool {
	for _, b := range binds {
		if !sharedBind(&b) {
			continue
		}
		for _, g := range b.GPUs {
			if r := s.cache.reservations[slot{b.Node, g.Index}]; r != nil && r.failed {
				return true
			}
		}
	}
	return false
}

// reconcileReservationsLocked deletes the reservations no shared task uses any more (and
// those the kubelet refused), and recreates the missing reservation of a slot a running
// shared pod uses (one deleted by hand, or pods from before reservations existed).
func (s *Scheduler) reconcileReservationsLocked() []func(context.Context) {
	c := s.cache
	if len(c.reservations) == 0 && len(c.sharedSlots) == 0 {
		return nil
	}
	used := make(map[slot]bool, len(c.sharedSlots))
	for at := range c.sharedSlots {
		used[at] = true
	}
	for _, g := range c.groups {
		for _, b := range g.assumed {
			if sharedBind(&b) {
				for _, d := range b.GPUs {
					used[slot{b.Node, d.Index}] = true
				}
			}
		}
	}
	var jobs []func(context.Context)
	for at, r := range c.reservations {
		if r.creating || r.terminating || r.deleting || r.pod == "" || (used[at] && !r.failed) {
			continue
		}
		r.deleting = true
		jobs = append(jobs, s.deleteReservationWork(at, r.pod, r.uid))
	}
	for at := range c.sharedSlots {
		if c.reservations[at] == nil {
			c.reservations[at] = &reservation{creating: true}
			jobs = append(jobs, s.createReservationWork(at))
		}
	}
	return jobs
}

// createReservationWork creates the reservation of a slot. On failure the slot is
// forgotten, so the next cycle asks again.
func (s *Scheduler) createReservationWork(at slot) func(context.Context) {
	return func(ctx context.Context) {
		pod := s.reservationPod(at)
		_, err := s.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		klog.FromContext(ctx).Info("creating a GPU reservation failed; retrying next cycle", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		c := s.cache
		c.mu.Lock()
		if r := c.reservations[at]; r != nil && r.pod == "" {
			delete(c.reservations, at)
		}
		c.mu.Unlock()
		c.poke()
	}
}

// deleteReservationWork deletes one reservation pod (that pod only: the UID must match).
func (s *Scheduler) deleteReservationWork(at slot, name string, uid types.UID) func(context.Context) {
	return func(ctx context.Context) {
		ns := s.cfg.GPUReservationNamespace
		err := s.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return
		}
		klog.FromContext(ctx).Info("deleting a GPU reservation failed; retrying next cycle", "pod", ns+"/"+name, "err", err)
		c := s.cache
		c.mu.Lock()
		if r := c.reservations[at]; r != nil && r.uid == uid {
			r.deleting = false
		}
		c.mu.Unlock()
		c.poke()
	}
}
