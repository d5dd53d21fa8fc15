package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// podEntry is what the cache keeps of one pod: converted once per pod event.
type podEntry struct {
	name, namespace string
	uid             types.UID
	group           string // PodGroup key (namespace/name); "" when the pod names none
	ours            bool   // scheduled by this scheduler
	node            string
	terminating     bool
	yielding        bool             // an idle-node validation: gives its node up to any job
	reservation     bool             // a GPU reservation pod (reservations.go)
	request         bridge.Resources // CPU, memory, extended; GPUMilli = whole GPUs * 1000
	gpu             bridge.GPURequest
	bad             string // why the request cannot be scheduled, "" when fine
	assignment      *v1alpha1.GPUAssignment
	assignmentRaw   string // the annotation assignment was parsed from
	taskGroup       string
	selector        map[string]string
	// cons is what the pod asks of its node by itself; placement what its gang asks of
	// nodes together, as far as the pod says it.
	cons        *nodeConstraints
	tolerations int // how many cons was read with
	placement   bridge.Placement
	rules       []podRule // required pod affinity and anti-affinity
	claims      []string  // the PersistentVolumeClaims it mounts
	// draClaims are the ResourceClaims it names (namespace/name), allocated as it is bound
	// (dra_bind.go).
	draClaims []string
	labels    map[string]string
	priority  int32
	queue     string
	partition string
	start     time.Time
	// deadline is spec.activeDeadlineSeconds, after which the kubelet ends the pod: a
	// manifest workload's time limit (0: none), which lets it run on nodes ahead of a
	// reservation's window it will have left by then.
	deadline time.Duration
	// oneOf is the pod itself when it is a group of one, nil for every other pod: the
	// shared cache's object, so holding it costs nothing, from which the PodGroup the group
	// stands for is made when it is asked for (groupEntry.podGroup).
	oneOf *corev1.Pod
}

func (p *podEntry) key() string { return p.namespace + "/" + p.name }

// convertPod reads what the scheduler needs from a pod.
func convertPod(pod *corev1.Pod, schedulerName string) *podEntry {
	return convertPodAfter(pod, schedulerName, nil)
}

// convertPodAfter is convertPod for a new version of the pod prev was converted from
// (nil: none): an unchanged GPU assignment annotation is not parsed again. A bound pod's
// every status update carries it, and its JSON decode was a visible share of a stream's
// CPU (measured: docs/benchmarks.md, Sluice's scheduler alone).
func convertPodAfter(pod *corev1.Pod, schedulerName string, prev *podEntry) *podEntry {
	e := &podEntry{
		name: pod.Name, namespace: pod.Namespace, uid: pod.UID, node: pod.Spec.NodeName,
		ours:        pod.Spec.SchedulerName == schedulerName,
		terminating: pod.DeletionTimestamp != nil,
		request:     podRequest(&pod.Spec),
	}
	_, e.yielding = pod.Labels[v1alpha1.IdleValidationLabel]
	if pod.Status.StartTime != nil {
		e.start = pod.Status.StartTime.Time
	} else {
		e.start = pod.CreationTimestamp.Time
	}
	if raw, ok := pod.Annotations[v1alpha1.GPUAssignmentAnnotation]; ok {
		e.assignmentRaw = raw
		if prev != nil && prev.assignmentRaw == raw {
			e.assignment = prev.assignment
		} else if a, err := v1alpha1.ParseGPUAssignment(raw); err == nil {
			e.assignment = &a
		}
	}
	e.labels = pod.Labels // what selectors match the pod by, ours and others'
	if !e.ours {
		return e
	}
	if g := pod.Annotations[v1alpha1.PodGroupAnnotation]; g != "" {
		e.group = pod.Namespace + "/" + g
	}
	if jobstate.GroupOfOne(pod) {
		e.oneOf = pod
	}
	e.taskGroup = pod.Annotations[v1alpha1.TaskGroupAnnotation]
	e.claims = podClaims(pod)
	e.selector = pod.Spec.NodeSelector
	// A pod's node selector and affinity never change and its tolerations may only be
	// added to: a later version of the same pod with as many tolerations asks the same.
	if prev != nil && prev.cons != nil && prev.uid == pod.UID && prev.tolerations == len(pod.Spec.Tolerations) {
		e.cons = prev.cons
	} else {
		e.cons = podConstraints(&pod.Spec)
	}
	e.tolerations = len(pod.Spec.Tolerations)
	e.placement = placementOf(pod.Annotations)
	e.placement.OnePerNode = onePerNode(pod)
	var err error
	if e.placement.Spread, err = spreadRules(pod); err != nil {
		e.bad = err.Error()
	}
	if e.rules, err = podRules(pod); err != nil {
		e.bad = err.Error()
	}
	if pod.Spec.Priority != nil {
		e.priority = *pod.Spec.Priority
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		e.deadline = time.Duration(*d) * time.Second
	}
	e.queue = pod.Labels[v1alpha1.QueueLabel]
	if e.queue == "" {
		e.queue = pod.Labels[v1alpha1.KAIQueueLabel]
	}
	e.partition = pod.Labels[v1alpha1.PartitionLabel]
	if e.partition == "" {
		e.partition = pod.Spec.NodeSelector[v1alpha1.PartitionLabel]
	}
	e.gpu, err = gpuRequest(e.request.GPUMilli/1000, pod.Annotations)
	if err != nil {
		e.bad = err.Error()
	}
	return e
}

// podRequest is what the pod holds on its node: the sum of its containers, or its largest
// init container if that is more, plus the runtime overhead; one of the node's pods; and
// each host port it takes, once however many of its containers name it. As in
// kube-scheduler's NodePorts, an init container's ports count only for a sidecar
// (restartPolicy Always), which runs as long as the pod.
func podRequest(spec *corev1.PodSpec) bridge.Resources {
	r := containerRequest(spec)
	r.Extended = addQuantity(r.Extended, podsResource, 1)
	addPorts := func(ps []corev1.ContainerPort) {
		for _, p := range ps {
			name := hostPortResource(p.Protocol, p.HostPort)
			if p.HostPort > 0 && !slices.ContainsFunc(r.Extended, func(q bridge.Quantity) bool { return q.Name == name }) {
				r.Extended = addQuantity(r.Extended, name, 1)
			}
		}
	}
	for i := range spec.InitContainers {
		if rp := spec.InitContainers[i].RestartPolicy; rp != nil && *rp == corev1.ContainerRestartPolicyAlways {
			addPorts(spec.InitContainers[i].Ports)
		}
	}
	for i := range spec.Containers {
		addPorts(spec.Containers[i].Ports)
	}
	return r
}

func containerRequest(spec *corev1.PodSpec) bridge.Resources {
	total := corev1.ResourceList{}
	for i := range spec.Containers {
		addList(total, spec.Containers[i].Resources.Requests)
	}
	for i := range spec.InitContainers {
		for name, q := range spec.InitContainers[i].Resources.Requests {
			if have := total[name]; q.Cmp(have) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	addList(total, spec.Overhead)
	return resourcesOf(total)
}

func addList(into, l corev1.ResourceList) {
	for name, q := range l {
		have := into[name]
		have.Add(q)
		into[name] = have
	}
}

// gpuRequest reads a pod's GPU ask: whole devices from nvidia.com/gpu, or a share of one
// (or several) devices from KAI's annotations.
func gpuRequest(whole int64, ann map[string]string) (bridge.GPURequest, error) {
	frac, hasFrac := ann[v1alpha1.GPUFractionAnnotation]
	mem, hasMem := ann[v1alpha1.GPUMemoryAnnotation]
	devices := int32(1)
	if raw, ok := ann[v1alpha1.GPUFractionNumDevicesAnnotation]; ok {
		n, err := strconv.ParseInt(raw, 10, 32)
		if err != nil || n < 1 {
			return bridge.GPURequest{}, fmt.Errorf("annotation %s=%q: want a whole number of devices >= 1", v1alpha1.GPUFractionNumDevicesAnnotation, raw)
		}
		devices = int32(n)
	}
	switch {
	case (hasFrac || hasMem) && whole > 0:
		return bridge.GPURequest{}, fmt.Errorf("the pod asks for %s and for a GPU share (%s/%s); ask for one or the other",
			v1alpha1.GPUResource, v1alpha1.GPUFractionAnnotation, v1alpha1.GPUMemoryAnnotation)
	case hasFrac && hasMem:
		return bridge.GPURequest{}, fmt.Errorf("annotations %s and %s are both set; set one", v1alpha1.GPUFractionAnnotation, v1alpha1.GPUMemoryAnnotation)
	case hasFrac:
		f, err := strconv.ParseFloat(frac, 64)
		if err != nil || f <= 0 || f >= 1 || math.IsNaN(f) {
			return bridge.GPURequest{}, fmt.Errorf("annotation %s=%q: want a fraction strictly between 0 and 1, e.g. 0.25", v1alpha1.GPUFractionAnnotation, frac)
		}
		milli := int32(math.Round(f * 1000))
		if milli < 1 {
			milli = 1
		}
		if devices > 1 {
			return bridge.GPURequest{Kind: bridge.GPUMultiFraction, Devices: devices, Milli: milli}, nil
		}
		return bridge.GPURequest{Kind: bridge.GPUFraction, Milli: milli}, nil
	case hasMem:
		mib, err := memoryMiB(mem)
		if err != nil {
			return bridge.GPURequest{}, fmt.Errorf("annotation %s=%q: %v", v1alpha1.GPUMemoryAnnotation, mem, err)
		}
		if devices > 1 {
			return bridge.GPURequest{}, fmt.Errorf("annotation %s with %s > 1 is not supported; ask for a fraction of each device instead",
				v1alpha1.GPUMemoryAnnotation, v1alpha1.GPUFractionNumDevicesAnnotation)
		}
		return bridge.GPURequest{Kind: bridge.GPUMemory, MemoryMiB: mib}, nil
	case whole > 0:
		return bridge.GPURequest{Kind: bridge.GPUWhole, Devices: int32(whole)}, nil
	}
	return bridge.GPURequest{}, nil
}

// memoryMiB reads a GPU memory amount: a plain number is MiB (as KAI reads it), a
// quantity with a unit ("20Gi") is converted.
func memoryMiB(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 {
			return 0, fmt.Errorf("want a positive amount of MiB")
		}
		return n, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("want a positive number of MiB or a quantity such as 20Gi")
	}
	return (q.Value() + (1<<20 - 1)) >> 20, nil
}
