package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// SharedTransform is the transform of the server's one informer cache per kind, which the
// scheduler, the accounting recorder, the Slurm job lifecycle, the remediation controller
// and the admission webhook all read: each object keeps the union of what any of them
// reads, applied once as it arrives. schedulerNames are Sluice's (spec.schedulerName);
// observe, when not nil, sees each pod whole first (the pod grouper, which creates a
// group from all of a pod).
//
// - Sluice's pods keep everything those readers may read of them: all metadata but
// managed fields; the spec but the containers' environment, commands, mounts and
// probes and the volumes that do not bind a pod to a node (the service account's
// projected token, config maps, secrets); the status but IPs and image ids. The ledger
// and the lifecycle read exit codes, termination messages (step reports), disruption
// conditions and reasons; the scheduler its placement fields.
// - Other pods keep what the scheduler reads of them (slimPod: requests, labels) and what
// a drain reads (owners, the mirror and node-fault annotations).
// - Nodes keep metadata, taints, unschedulable, capacity, allocatable and conditions
// (remediation's faults); images, addresses and node info go.
// - Everything else loses only its managed fields.
func SharedTransform(schedulerNames []string, observe func(*corev1.Pod)) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.Pod:
			if observe != nil {
				observe(o)
			}
			if slices.Contains(schedulerNames, o.Spec.SchedulerName) {
				return trimSluicePod(o), nil
			}
			return trimOtherPod(o, schedulerNames), nil
		case *corev1.Node:
			return trimNode(o), nil
		case metav1.Object:
			o.SetManagedFields(nil)
		}
		return obj, nil
	}
}

// trimSluicePod is a new pod sharing the unchanged parts with p, which stays whole for
// whoever observed it.
func trimSluicePod(p *corev1.Pod) *corev1.Pod {
	out := *p
	out.ManagedFields = nil
	out.Spec.Volumes = claimVolumes(p.Spec.Volumes) // what placement reads (placement_volumes.go)
	out.Spec.Containers = trimContainers(p.Spec.Containers)
	out.Spec.InitContainers = trimContainers(p.Spec.InitContainers)
	out.Spec.EphemeralContainers = nil
	out.Status.PodIP, out.Status.PodIPs, out.Status.HostIP, out.Status.HostIPs = "", nil, "", nil
	out.Status.ContainerStatuses = trimStatuses(p.Status.ContainerStatuses)
	out.Status.InitContainerStatuses = trimStatuses(p.Status.InitContainerStatuses)
	out.Status.EphemeralContainerStatuses = nil
	return &out
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, Ports: hostPorts(c.Ports), Resources: c.Resources,
			RestartPolicy: c.RestartPolicy, ResizePolicy: c.ResizePolicy}
	}
	return out
}

func trimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = corev1.ContainerStatus{Name: s.Name, State: s.State, LastTerminationState: s.LastTerminationState,
			Ready: s.Ready, RestartCount: s.RestartCount, Started: s.Started}
	}
	return out
}

// trimOtherPod is slimPod plus what a drain reads of any pod on its node. slimPod keeps
// the labels and gives a pod of another scheduler an annotation map of its own, so keys
// can be added to it.
func trimOtherPod(p *corev1.Pod, schedulerNames []string) *corev1.Pod {
	out := slimPod(p, schedulerNames[0])
	out.OwnerReferences = p.OwnerReferences
	out.Annotations = keepKey(out.Annotations, p.Annotations, corev1.MirrorPodAnnotationKey)
	out.Annotations = keepKey(out.Annotations, p.Annotations, v1alpha1.NodeFaultAnnotation)
	return out
}

func keepKey(into, from map[string]string, key string) map[string]string {
	v, ok := from[key]
	if !ok {
		return into
	}
	if into == nil {
		into = map[string]string{}
	}
	into[key] = v
	return into
}

// trimNode keeps what the scheduler, the recorder and remediation read of a node.
func trimNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: n.ObjectMeta, Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable, Conditions: n.Status.Conditions}}
	out.ManagedFields = nil
	return out
}
