package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The DRA objects' event handlers: each change refreshes the nodes and pods it bears on.

func (s *Scheduler) resourceSliceHandlers() toolscache.ResourceEventHandler {
	set := func(sl *resourceapi.ResourceSlice, gone bool) {
		c := s.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		old := c.dra.slices[sl.Name]
		if gone {
			c.dra.setSlice(sl.Name, nil)
		} else {
			c.dra.setSlice(sl.Name, sl)
		}
		for _, x := range []*resourceapi.ResourceSlice{old, sl} {
			if x != nil && x.Spec.NodeName != nil {
				c.refreshDRANode(*x.Spec.NodeName)
			}
		}
		c.nodeGen++ // where claims could be met
		c.poke()
	}
	return handler(func(sl *resourceapi.ResourceSlice) { set(sl, false) }, func(sl *resourceapi.ResourceSlice) { set(sl, true) })
}

func (s *Scheduler) deviceClassHandlers() toolscache.ResourceEventHandler {
	set := func(dc *resourceapi.DeviceClass, gone bool) {
		c := s.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		if gone {
			delete(c.dra.classes, dc.Name)
		} else {
			c.dra.classes[dc.Name] = dc
		}
		for name := range c.nodes { // which devices are GPUs
			c.refreshDRANode(name)
		}
		c.nodeGen++
		c.poke()
		s.refillLocked(keysOf(c.dra.pods))
	}
	return handler(func(dc *resourceapi.DeviceClass) { set(dc, false) }, func(dc *resourceapi.DeviceClass) { set(dc, true) })
}

func (s *Scheduler) resourceClaimHandlers() toolscache.ResourceEventHandler {
	set := func(rc *resourceapi.ResourceClaim, gone bool) {
		c := s.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		key := rc.Namespace + "/" + rc.Name
		old := c.dra.claims[key]
		if gone {
			c.dra.indexClaim(key, old, nil)
		} else {
			c.dra.indexClaim(key, old, rc)
		}
		if gone {
			delete(c.dra.claims, key)
			delete(c.dra.inflight, key)
		} else {
			c.dra.claims[key] = rc
			c.dra.claim(key) // drops ours once the informer has it
		}
		nodes := append(c.dra.draNodesOf(old), c.dra.draNodesOf(rc)...)
		slices.Sort(nodes)
		for _, n := range slices.Compact(nodes) {
			c.refreshDRATaken(n)
		}
		if old == nil || gone || (old.Status.Allocation == nil) != (rc.Status.Allocation == nil) || !sameClaimSpec(old, rc) {
			s.refillLocked(keysOf(c.dra.users[key]))
		}
	}
	return handler(func(rc *resourceapi.ResourceClaim) { set(rc, false) }, func(rc *resourceapi.ResourceClaim) { set(rc, true) })
}

func (s *Scheduler) resourceClaimTemplateHandlers() toolscache.ResourceEventHandler {
	set := func(t *resourceapi.ResourceClaimTemplate, gone bool) {
		c := s.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		key := t.Namespace + "/" + t.Name
		if gone {
			delete(c.dra.templates, key)
		} else {
			c.dra.templates[key] = t
		}
		s.refillLocked(keysOf(c.dra.users[key]))
	}
	return handler(func(t *resourceapi.ResourceClaimTemplate) { set(t, false) }, func(t *resourceapi.ResourceClaimTemplate) { set(t, true) })
}

func sameClaimSpec(a, b *resourceapi.ResourceClaim) bool {
	return a.Generation == b.Generation && a.UID == b.UID && (a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil)
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// refillLocked converts DRA pods again after a claim, template or class they depend on
// changed. It runs apart from the handler (which holds c.mu), as the pod handler does.
func (s *Scheduler) refillLocked(pods []string) {
	if len(pods) == 0 {
		return
	}
	var again []*corev1.Pod
	for _, k := range pods {
		if p := s.cache.dra.pods[k]; p != nil {
			again = append(again, p)
		}
	}
	go func() {
		for _, p := range again {
			s.cache.mu.Lock()
			current := s.cache.dra.pods[podKey(p.Namespace, p.Name)] == p // no newer version came
			s.cache.mu.Unlock()
			if current {
				s.setPodFromInformer(p)
			}
		}
	}()
}
