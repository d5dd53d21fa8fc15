package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// claimFinalizer keeps an allocated claim from being deleted while its devices are in use;
// the resource claim controller removes it when it deallocates the claim (kube-scheduler
// adds the same one).
const claimFinalizer = "resource.kubernetes.io/delete-protection"

// claimAllocation is what allocating a pod's claims did, so a failed bind can undo it.
type claimAllocation struct {
	reserved []*resourceapi.ResourceClaim // as written: allocated (by us or before) and reserved for the pod
	ours     map[string]bool              // claims this allocation allocated, by key
	gpus     *v1alpha1.GPUAssignment      // the GPUs the claims hold, for the pod's annotation
	consumer resourceapi.ResourceClaimConsumerReference
}

// bindClaims allocates a pod's resource claims before its bind (nil, nil for a pod
// without), and makes the binding name the GPUs they got instead of those the core
// counted (the same number on the same node; the allocator picks which). A pod whose
// claims cannot be met is told why with an Event and is placed again next cycle.
func (s *Scheduler) bindClaims(ctx context.Context, ns string, b bridge.Bind, binding *corev1.Binding) (*claimAllocation, error) {
	p := s.cache.pod(ns + "/" + b.Task)
	if p == nil || len(p.draClaims) == 0 {
		return nil, nil
	}
	a, err := s.allocateClaims(ctx, ns, b.Task, p.uid, b.Node, p.draClaims)
	if err != nil {
		ref := &corev1.Pod{}
		ref.Name, ref.Namespace, ref.UID = b.Task, ns, p.uid
		s.events.Eventf(ref, corev1.EventTypeWarning, "FailedScheduling", "not bound to node %s: %v; trying again", b.Node, err)
		return nil, err
	}
	for k := range binding.Annotations { // the driver, not Sluice, makes the devices visible
		delete(binding.Annotations, k)
	}
	if a.gpus != nil {
		binding.Annotations = map[string]string{v1alpha1.GPUAssignmentAnnotation: a.gpus.Encode()}
	}
	return a, nil
}

// allocateClaims gives a pod's resource claims devices on its node and reserves them for
// it, before the bind, as kube-scheduler's DRA plugin does: the allocation is computed by
// the structured allocator against every allocated device (the informer's and those this
// scheduler allocated and has not seen come back), and written to each claim's status.
// Allocations are computed one pod at a time (draMu) and held as pending until written,
// so two binds never take one device; the writes, two round trips per claim, run outside
// the lock, so binds' writes overlap as other binds' do.
func (s *Scheduler) allocateClaims(ctx context.Context, ns, pod string, uid types.UID, node string, keys []string) (*claimAllocation, error) {
	out, claims, err := s.computeAllocation(ctx, pod, uid, node, keys)
	if err != nil {
		return nil, err
	}
	c := s.cache
	defer func() { // written or given up: no longer pending, and the node's view again
		c.mu.Lock()
		for key := range out.ours {
			delete(c.dra.pending, key)
		}
		c.refreshDRATaken(node)
		c.mu.Unlock()
	}()
	for _, cl := range claims {
		key := cl.Namespace + "/" + cl.Name
		written, err := s.reserveClaim(ctx, cl, out.consumer, out.ours[key])
		if err != nil {
			s.unreserve(ctx, out, out.consumer)
			return nil, fmt.Errorf("reserve ResourceClaim %s: %w", cl.Name, err)
		}
		out.reserved = append(out.reserved, written)
		if out.ours[key] {
			c.mu.Lock()
			if seen := c.dra.claims[key]; seen == nil || olderVersion(seen, written) {
				c.dra.inflight[key] = written
			}
			c.mu.Unlock()
		}
	}
	var gpus *draNode
	c.mu.Lock()
	if ne := c.nodes[node]; ne != nil {
		gpus = ne.dra
	}
	c.mu.Unlock()
	out.gpus = assignedGPUs(out.reserved, gpus)
	return out, nil
}

// computeAllocation runs the allocator for a pod's claims on node and holds what it
// allocated as pending (draState.pending) until the caller has written it. It returns the
// pod's claims, allocated, and which of them it allocated.
func (s *Scheduler) computeAllocation(ctx context.Context, pod string, uid types.UID, node string, keys []string) (*claimAllocation, []*resourceapi.ResourceClaim, error) {
	s.draMu.Lock()
	defer s.draMu.Unlock()
	c := s.cache
	c.mu.Lock()
	ne := c.nodes[node]
	if ne == nil || ne.kube == nil {
		c.mu.Unlock()
		return nil, nil, fmt.Errorf("node %s is gone", node)
	}
	kubeNode := ne.kube
	state, _ := c.dra.allocatedDevices(node)
	slicesNow, classes := c.dra.sliceList(), classLister(maps.Clone(c.dra.classes))
	claims := make([]*resourceapi.ResourceClaim, 0, len(keys))
	var missing []string
	for _, k := range keys {
		if cl := c.dra.claim(k); cl != nil {
			claims = append(claims, cl.DeepCopy())
		} else {
			missing = append(missing, k)
		}
	}
	c.mu.Unlock()
	for _, k := range missing { // made a moment ago (a Slurm job's): not in the informer yet
		cns, name, _ := strings.Cut(k, "/")
		cl, err := s.kube.ResourceV1().ResourceClaims(cns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("ResourceClaim %s: %w", k, err)
		}
		claims = append(claims, cl)
	}

	var todo []*resourceapi.ResourceClaim
	for _, cl := range claims {
		if cl.Status.Allocation == nil {
			todo = append(todo, cl)
		}
	}
	if len(todo) > 0 {
		alloc, err := structured.NewAllocator(ctx, draFeatures, state, classes, slicesNow, c.dra.celCache)
		if err != nil {
			return nil, nil, err
		}
		actx, cancel := context.WithTimeout(ctx, draBindBudget)
		results, err := alloc.Allocate(actx, kubeNode, todo)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("allocate its resource claims on node %s: %w", node, err)
		}
		if results == nil {
			return nil, nil, fmt.Errorf("its resource claims cannot be met on node %s with the devices free there now", node)
		}
		for i := range todo {
			todo[i].Status.Allocation = &results[i]
		}
	}
	consumer := resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod, UID: uid}
	out := &claimAllocation{ours: map[string]bool{}, consumer: consumer}
	c.mu.Lock()
	for _, cl := range todo {
		key := cl.Namespace + "/" + cl.Name
		out.ours[key] = true
		c.dra.pending[key] = cl
	}
	c.mu.Unlock()
	return out, claims, nil
}

// claimForSlurmPod allocates the resource claims of a Slurm job's pod just created bound
// to node (the pod factory made them: a DRA partition's GPUs) and names the GPUs they got
// on the pod, as a bind's assignment does. Nothing to do for a pod without claims.
func (s *Scheduler) claimForSlurmPod(ctx context.Context, pod *corev1.Pod, node string) error {
	keys, wait := claimKeys(pod)
	if wait != "" {
		return errors.New(wait)
	}
	if len(keys) == 0 {
		return nil
	}
	a, err := s.allocateClaims(ctx, pod.Namespace, pod.Name, pod.UID, node, keys)
	if err != nil {
		return fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	if a.gpus == nil {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.GPUAssignmentAnnotation: a.gpus.Encode()}}})
	if _, err := s.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("pod %s: name its GPUs: %w", pod.Name, err)
	}
	return nil
}

// reserveClaim writes a claim's finalizer (when it is allocated here) and its status: the
// allocation and the pod among its consumers.
func (s *Scheduler) reserveClaim(ctx context.Context, cl *resourceapi.ResourceClaim, consumer resourceapi.ResourceClaimConsumerReference, allocate bool) (*resourceapi.ResourceClaim, error) {
	api := s.kube.ResourceV1().ResourceClaims(cl.Namespace)
	status := cl.Status
	if allocate && !slices.Contains(cl.Finalizers, claimFinalizer) {
		cl.Finalizers = append(cl.Finalizers, claimFinalizer)
		updated, err := api.Update(ctx, cl, metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		cl = updated
		cl.Status = status
	}
	if slices.ContainsFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == consumer.UID }) && !allocate {
		return cl, nil
	}
	if !slices.ContainsFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == consumer.UID }) {
		cl.Status.ReservedFor = append(cl.Status.ReservedFor, consumer)
	}
	return api.UpdateStatus(ctx, cl, metav1.UpdateOptions{})
}

// unreserve takes a pod whose bind failed off its claims' consumers, and gives back the
// devices of the claims allocated for it, as kube-scheduler's Unreserve does.
func (s *Scheduler) unreserve(ctx context.Context, a *claimAllocation, consumer resourceapi.ResourceClaimConsumerReference) {
	for _, cl := range a.reserved {
		key := cl.Namespace + "/" + cl.Name
		cl = cl.DeepCopy()
		cl.Status.ReservedFor = slices.DeleteFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == consumer.UID })
		if a.ours[key] && len(cl.Status.ReservedFor) == 0 {
			cl.Status.Allocation = nil
		}
		api := s.kube.ResourceV1().ResourceClaims(cl.Namespace)
		updated, err := api.UpdateStatus(ctx, cl, metav1.UpdateOptions{})
		if err != nil {
			s.log.V(2).Info("could not give back a claim's devices; the resource claim controller will", "claim", key, "err", err)
			continue
		}
		if updated.Status.Allocation == nil {
			updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == claimFinalizer })
			_, _ = api.Update(ctx, updated, metav1.UpdateOptions{})
		}
		s.cache.mu.Lock()
		delete(s.cache.dra.inflight, key)
		s.cache.mu.Unlock()
	}
}

// assignedGPUs lists the node's DRA GPUs the claims were given, as the GPU assignment
// annotation names them (the ledger counts the pod's GPUs from it, remediation finds the
// pods on a faulty one); nil when they hold none.
func assignedGPUs(claims []*resourceapi.ResourceClaim, node *draNode) *v1alpha1.GPUAssignment {
	if node == nil {
		return nil
	}
	a := &v1alpha1.GPUAssignment{Portion: 1}
	for _, cl := range claims {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			for _, g := range node.gpus {
				if g.id == id {
					a.GPUs = append(a.GPUs, v1alpha1.AssignedGPU{Index: g.gpu.Index, UUID: g.gpu.UUID})
				}
			}
		}
	}
	if len(a.GPUs) == 0 {
		return nil
	}
	return a
}
