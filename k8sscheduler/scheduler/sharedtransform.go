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
// managed fields; the spec but the containers' images, environment, commands, mounts,
// probes and limits, the pod's security context and the volumes that do not bind a pod
// to a node (the service account's projected token, config maps, secrets); the status
// but IPs, image ids and the conditions other than DisruptionTarget. The ledger and the
// lifecycle read exit codes, termination messages (step reports), disruption conditions
// and reasons; the scheduler its placement fields (requests, host ports, tolerations).
// - Other pods keep what the scheduler reads of them (slimPod: requests, labels) and what
// a drain reads (owners, the mirror and node-fault annotations).
// - Pods that ask alike share one copy of their trimmed containers and tolerations
// (sharedSlices): most pods are one of many of a job or a DaemonSet. Their label and
// annotation keys, and the values of a few keys (queue, partition), are interned.
// - Nodes keep metadata, taints, unschedulable, capacity, allocatable and conditions
// (remediation's faults); images, addresses and node info go.
// - Everything else loses only its managed fields.
func SharedTransform(schedulerNames []string, observe func(*corev1.Pod)) toolscache.TransformFunc {
	t := &sharedTrim{}
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.Pod:
			if observe != nil {
				observe(o)
			}
			if slices.Contains(schedulerNames, o.Spec.SchedulerName) {
				return t.sluicePod(o), nil
			}
			return t.otherPod(o, schedulerNames), nil
		case *corev1.Node:
			return trimNode(o), nil
		case metav1.Object:
			o.SetManagedFields(nil)
		}
		return obj, nil
	}
}

// sharedTrim is the state of one SharedTransform: the slices its pods share.
type sharedTrim struct {
	containers  sharedSlices[corev1.Container, *corev1.Container]
	tolerations sharedSlices[corev1.Toleration, *corev1.Toleration]
}

// sluicePod is a new pod sharing the unchanged parts with p, which stays whole for
// whoever observed it.
func (t *sharedTrim) sluicePod(p *corev1.Pod) *corev1.Pod {
	out := *p
	out.ManagedFields = nil
	out.Labels, out.Annotations = internedMeta(p.Labels), internedMeta(p.Annotations)
	out.Spec.Volumes = claimVolumes(p.Spec.Volumes) // what placement reads (placement_volumes.go)
	out.Spec.Containers = t.containers.share(trimContainers(p.Spec.Containers))
	out.Spec.InitContainers = t.containers.share(trimContainers(p.Spec.InitContainers))
	out.Spec.EphemeralContainers = nil
	out.Spec.Tolerations = t.tolerations.share(p.Spec.Tolerations)
	out.Spec.SecurityContext = nil
	out.Status.PodIP, out.Status.PodIPs, out.Status.HostIP, out.Status.HostIPs = "", nil, "", nil
	out.Status.Conditions = disruptions(p.Status.Conditions)
	out.Status.ContainerStatuses = trimStatuses(p.Status.ContainerStatuses)
	out.Status.InitContainerStatuses = trimStatuses(p.Status.InitContainerStatuses)
	out.Status.EphemeralContainerStatuses = nil
	return &out
}

// trimContainers keeps what the scheduler reads of a container (requests, host ports, a
// sidecar's restart policy) and the name the lifecycle and the ledger match statuses by.
func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Ports: hostPorts(c.Ports), RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests, Claims: c.Resources.Claims}}
	}
	return out
}

// disruptions keeps the DisruptionTarget condition, the only pod condition a reader reads
// (jobstate: preempted, drained, node failure); the scheduled, initialized and ready ones
// go.
func disruptions(cs []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range cs {
		if c.Type == corev1.DisruptionTarget {
			out = append(out, c)
		}
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

// otherPod is slimPod plus what a drain reads of any pod on its node. slimPod keeps
// the labels and gives a pod of another scheduler an annotation map of its own, so keys
// can be added to it.
func (t *sharedTrim) otherPod(p *corev1.Pod, schedulerNames []string) *corev1.Pod {
	out := slimPod(p, schedulerNames[0])
	out.Labels = internedMeta(out.Labels)
	out.Spec.Containers = t.containers.share(out.Spec.Containers)
	out.Spec.InitContainers = t.containers.share(out.Spec.InitContainers)
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
