package scheduler

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/gpureservation"
)

// A shared GPU is held in the NVIDIA device plugin's books by a reservation pod: bound to
// the node, asking for nvidia.com/gpu: 1, so kube-scheduler, the kubelet and the device
// plugin see the GPU as taken, and the kubelet gives it a device that the pod writes on
// itself (gpureservation). Fraction pods on that GPU are bound only once it has, and are
// pointed at that device. The core's GPU indices are slots: a whole-GPU pod's devices are
// the kubelet's choice, a shared slot's device is its reservation's, and the counts agree
// (docs/architecture.md, "Shared GPUs and the device plugin").

// slot is one GPU index of a node as the core numbers it.
type slot struct {
	node  string
	index int32
}

// reservation is one reservation pod, by slot (the GPU index the core chose).
type reservation struct {
	pod         string // "" until the informer has seen it
	uid         types.UID
	device      string // what the pod reported, "" until then
	failed      bool   // the kubelet refused it (no device free): its fractions go back
	terminating bool
	creating    bool // a create was sent and not yet seen
	deleting    bool // a delete was sent (the informer may not say so yet)
}

// reservationName is the pod's name: the node and the slot, or a hash of them when that
// would be longer than a pod name may be.
func reservationName(node string, index int32) string {
	name := fmt.Sprintf("gpu-%s-%d", node, index)
	if len(name) <= 253 {
		return name
	}
	h := fnv.New64a()
	h.Write([]byte(node))
	return fmt.Sprintf("gpu-%x-%d", h.Sum64(), index)
}

// sharedBind reports whether a bind takes part of its devices: those need reservations.
// A whole-GPU bind carries the device's memory too, so only the portion tells them apart
// (a gpu-memory ask of 99.9% or more of a device comes out at a portion of 1 and is taken
// for whole: docs/architecture.md).
func sharedBind(b *bridge.Bind) bool {
	return len(b.GPUs) > 0 && b.GPUMilli < 1000
}

// isReservation reports whether a pod is one of ours: by name of scheduler and label, in
// the namespace the scheduler creates them in (a tenant's look-alike elsewhere is an
// ordinary foreign pod and points no fraction anywhere).
func isReservation(p *corev1.Pod, namespace string) bool {
	return p.Namespace == namespace && p.Spec.SchedulerName == v1alpha1.GPUReservationSchedulerName &&
		p.Labels[v1alpha1.GPUReservationLabel] == "true"
}

// setReservation records what the informer says of a reservation pod; gone removes it.
func (c *cache) setReservation(p *corev1.Pod, gone bool) {
	a, err := v1alpha1.ParseGPUAssignment(p.Annotations[v1alpha1.GPUAssignmentAnnotation])
	if err != nil || len(a.GPUs) != 1 || p.Spec.NodeName == "" {
		return
	}
	key := slot{p.Spec.NodeName, a.GPUs[0].Index}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reservations[key]
	if gone {
		if r != nil && r.uid == p.UID {
			delete(c.reservations, key)
			c.poke()
		}
		return
	}
	if r == nil {
		r = &reservation{}
		c.reservations[key] = r
	}
	before := *r
	r.pod, r.uid, r.creating = p.Name, p.UID, false
	r.device = p.Annotations[v1alpha1.ReservedGPUAnnotation]
	r.failed = p.Status.Phase == corev1.PodFailed
	r.terminating = p.DeletionTimestamp != nil
	if *r != before {
		c.poke() // a device reported (or lost) releases (or returns) parked binds
	}
}

// parkedBinds are binds of shared tasks waiting for their GPUs' reservations to report a
// device. They stay assumed, so the core keeps their slots.
type parkedBinds struct {
	job    string
	binds  []bridge.Bind
	create bool // a pod-less (Slurm) group's create, else one bind each
}

// reservedBinds resolves the devices of a job's shared binds through their reservations.
// It returns the binds with each shared GPU's UUID set to its reservation's device and
// ready true when all are known; otherwise it asks for the missing reservations (their
// creates are returned as work) and ready is false. Called with c.mu held.
func (s *Scheduler) reservedBindsLocked(binds []bridge.Bind) (out []bridge.Bind, ready bool, work []func(context.Context)) {
	c := s.cache
	ready = true
	out = make([]bridge.Bind, len(binds))
	for i, b := range binds {
		out[i] = b
		if !sharedBind(&b) {
			continue
		}
		out[i].GPUs = slices.Clone(b.GPUs)
		for j, g := range b.GPUs {
			key := slot{b.Node, g.Index}
			r := c.reservations[key]
			switch {
			case r == nil:
				c.reservations[key] = &reservation{creating: true}
				work = append(work, s.createReservationWork(key))
				ready = false
			case r.device == "" || r.failed || r.terminating || r.deleting:
				ready = false
			default:
				out[i].GPUs[j].UUID = r.device
			}
		}
	}
	return out, ready, work
}

// reservationPod is the pod that holds a slot in the device plugin's books.
func (s *Scheduler) reservationPod(at slot) *corev1.Pod {
	node, index := at.node, at.index
	a := v1alpha1.GPUAssignment{GPUs: []v1alpha1.AssignedGPU{{Index: index}}} // portion 0: the slot is shared, not used
	ann := assignmentAnnotations(a)
	zero := int64(0)
	one := resource.MustParse("1")
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	limits := corev1.ResourceList{v1alpha1.GPUResource: one, corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	requests := small.DeepCopy()
	requests[v1alpha1.GPUResource] = one
	no := false
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: reservationName(node, index), Namespace: s.cfg.GPUReservationNamespace,
			Labels: map[string]string{v1alpha1.GPUReservationLabel: "true"},
			Annotations: map[string]string{
				v1alpha1.GPUAssignmentAnnotation: ann[v1alpha1.GPUAssignmentAnnotation],
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			SchedulerName:                 v1alpha1.GPUReservationSchedulerName,
			ServiceAccountName:            s.cfg.GPUReservationServiceAccount,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &zero,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:  "reserve",
				Image: s.cfg.GPUReservationImage,
				// The image's binary by its path, as the launcher init container runs it:
				// the image (the Dockerfile's distroless one) has no PATH that holds it.
				Command: []string{"/sluice", "gpu-reservation"},
				Env: []corev1.EnvVar{
					{Name: gpureservation.PodNameEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: gpureservation.PodNamespaceEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				},
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// sharedSlotsOf lists the slots a bound shared-GPU pod uses (none for a reservation).
func sharedSlotsOf(p *podEntry) []slot {
	a := p.assignment
	if p.reservation || p.node == "" || a == nil || a.Portion >= 1 {
		return nil
	}
	out := make([]slot, len(a.GPUs))
	for i, g := range a.GPUs {
		out[i] = slot{p.node, g.Index}
	}
	return out
}

// countShared adds (delta +1) or removes (-1) a pod's shared slots. Called with c.mu held.
func (c *cache) countShared(p *podEntry, delta int) {
	for _, at := range sharedSlotsOf(p) {
		if c.sharedSlots[at] += delta; c.sharedSlots[at] <= 0 {
			delete(c.sharedSlots, at)
		}
	}
}
