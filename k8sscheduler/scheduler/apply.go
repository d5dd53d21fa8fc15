package scheduler

import (
	"context"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bridge"
)

// apply turns one cycle's decisions into work for the worker pool: evictions first, then
// binds (those waiting for evictions are left to a later cycle, when the evicted pods have
// gone), then the status writes the cycle changed.
func (s *Scheduler) apply(ctx context.Context, d *bridge.Decisions, blocked []bridge.Pending, now time.Time) {
	c := s.cache
	var jobs []func(context.Context)
	c.mu.Lock()
	for i := range d.Evictions {
		if job := s.evictionLocked(d.Evictions[i]); job != nil {
			jobs = append(jobs, job)
		}
	}
	waiting := map[string]bool{}
	for _, b := range d.Binds {
		if b.AfterEvictions {
			waiting[b.Job] = true
		}
	}
	// An idle-node validation gives its node up: it is deleted now and the job binds in
	// the cycle after it is gone (its GPUs are the kubelet's to free first).
	for _, y := range d.Yields {
		waiting[y.ForJob] = true
		if job := s.yieldLocked(y); job != nil {
			jobs = append(jobs, job)
		}
	}
	byJob := map[string][]bridge.Bind{}
	var order []string
	for _, b := range d.Binds {
		if waiting[b.Job] {
			continue
		}
		if _, seen := byJob[b.Job]; !seen {
			order = append(order, b.Job)
		}
		byJob[b.Job] = append(byJob[b.Job], b)
	}
	jobs = append(jobs, s.releaseParkedLocked()...)
	for _, job := range order {
		jobs = append(jobs, s.bindsLocked(job, byJob[job])...)
	}
	jobs = append(jobs, s.reconcileReservationsLocked()...)
	pending := make(map[string]bridge.Pending, len(d.Pending)+len(blocked))
	for _, p := range d.Pending {
		pending[p.Job] = p
	}
	for _, p := range blocked {
		pending[p.Job] = p
	}
	for _, g := range c.groups {
		if job := s.strayPodsLocked(g); job != nil {
			jobs = append(jobs, job)
		}
		if job := s.restoreLocked(g, now); job != nil {
			jobs = append(jobs, job)
		}
		p, waits := pending[g.key]
		if job := s.groupStatusLocked(g, p, waits, now); job != nil {
			jobs = append(jobs, job)
		}
		if evict := g.status.takeEvictAfter(); evict != nil { // no write took it
			jobs = append(jobs, evict)
		}
	}
	jobs = append(jobs, s.batchReasonsLocked(now)...)
	for key := range s.evicting {
		if c.pods[key] == nil {
			delete(s.evicting, key)
		}
	}
	c.mu.Unlock()
	s.metrics.observePending(pending)
	jobs = append(jobs, s.queueStatus(d.Shares, now)...)
	for _, job := range jobs {
		select {
		case s.work <- job:
		case <-ctx.Done():
			return
		}
	}
}

// evictionLocked records an eviction and returns its work, or nil when the pod is already
// being evicted or not bound yet.
func (s *Scheduler) evictionLocked(e bridge.Eviction) func(context.Context) {
	g := s.cache.groups[e.Job]
	if g == nil {
		return nil
	}
	p := g.pods.get(e.Task)
	if p == nil || p.node == "" || p.terminating || s.evicting[p.key()] {
		return nil
	}
	s.evicting[p.key()] = true
	g.status.evicted = &e
	evict := s.evictWork(p.namespace, p.name, p.uid, e)
	if !g.implied() {
		return evict
	}
	// A group of one is evicted after its PodGroup is written with the Evicted condition,
	// so the ledger and squeue learn why it ended: this cycle's status pass writes it and
	// chains the eviction.
	g.status.evictAfter = evict
	return nil
}

// yieldLocked returns the deletion of an idle-node validation a job needs the node of,
// or nil when it is already on its way out.
func (s *Scheduler) yieldLocked(y bridge.Yield) func(context.Context) {
	p := s.cache.pods[y.Task]
	if p == nil || !p.yielding || p.terminating || s.evicting[y.Task] {
		return nil
	}
	s.evicting[y.Task] = true
	return s.yieldWork(p.namespace, p.name, p.uid, y)
}

// bindsLocked assumes a job's binds and returns their work: one bind per existing pod, or
// one create of all pods for a pod-less (Slurm) group.
func (s *Scheduler) bindsLocked(job string, binds []bridge.Bind) []func(context.Context) {
	g := s.cache.groups[job]
	if g == nil || g.podGroup() == nil {
		return nil
	}
	if g.assumed == nil {
		g.assumed = map[string]bridge.Bind{}
	}
	g.dirty = true
	ns := namespaceOf(job)
	if g.memberBased() && !g.created {
		g.created, g.createdRun = true, g.pg.Status.Requeues
		for _, b := range binds {
			g.assumed[b.Task] = b
		}
		return s.createOrParkLocked(g, binds)
	}
	out := make([]func(context.Context), 0, len(binds))
	for _, b := range binds {
		if p := g.pods.get(b.Task); p == nil || p.node != "" {
			continue
		}
		g.assumed[b.Task] = b
		out = append(out, s.bindOrParkLocked(job, ns, b)...)
	}
	return out
}

func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// forget drops an assumed bind that failed, so the next cycle places the task again.
func (s *Scheduler) forget(job string, tasks ...string) {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[job]; g != nil {
		for _, t := range tasks {
			g.unassume(t)
		}
		g.dirty = true
	}
	c.poke()
}
