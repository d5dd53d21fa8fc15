package jobstate

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// JobContainer is the container of a Slurm job's pod that runs the task.
const JobContainer = "job"

// Disruption is why a pod was taken from a running job that did not end it itself:
// Preempted (the Eviction API: the scheduler's preemption and reclaim; another
// scheduler's preemption) or NodeFail (the node failed under it, or it was drained off a
// faulty node); "" when the pod was not disrupted.
//
// A kubelet's node-pressure eviction is not a disruption but the pod's failure: the node
// is up, and the pod was killed for using what the node ran short of (memory, disk),
// which Slurm reports as the job's FAILED (or OUT_OF_MEMORY), not NODE_FAIL, and does not
// requeue; Kubernetes too reports the pod Failed with reason Evicted.
func Disruption(p *corev1.Pod) State {
	if drainedOffFault(p) {
		return NodeFail
	}
	if pressureEvicted(p) {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case "EvictionByEvictionAPI", "PreemptionByScheduler", "PreemptionByKubeScheduler":
			return Preempted
		default: // DeletionByTaintManager, DeletionByPodGC, TerminationByKubelet (node shutdown)
			return NodeFail
		}
	}
	if p.Status.Reason == "NodeLost" {
		return NodeFail
	}
	return ""
}

// PressureEvictedReason is the pod status reason the kubelet gives a pod it evicted for
// node pressure (its DisruptionTarget reason, TerminationByKubelet, is also a graceful
// node shutdown's, whose status reason is Terminated).
const PressureEvictedReason = "Evicted"

func pressureEvicted(p *corev1.Pod) bool { return p.Status.Reason == PressureEvictedReason }

// drainedOffFault: the remediation controller marked the pod with the fault it drains
// the node for and the pod is on its way out (evicted, or deleted past the drain
// timeout). The Eviction API marks every eviction EvictionByEvictionAPI, so without the
// mark a drain would read as a preemption. A marked pod that a PodDisruptionBudget still
// holds has not left yet.
func drainedOffFault(p *corev1.Pod) bool {
	if _, ok := p.Annotations[v1alpha1.NodeFaultAnnotation]; !ok {
		return false
	}
	if p.DeletionTimestamp != nil {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Ended reports whether the pod's containers have all ended.
func Ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Failure is how a failed pod failed: its exit code and signal (1 and 0 when no container
// ended, e.g. the node rejected it) and the Kubernetes reason (the pod's, else its
// container's: OOMKilled, DeadlineExceeded, Error, ...).
type Failure struct {
	ExitCode, Signal int32
	Reason           string
}

// FailureOf is how pod p failed; ok is false when it has not failed.
func FailureOf(p *corev1.Pod) (f Failure, ok bool) {
	if p.Status.Phase != corev1.PodFailed {
		return Failure{}, false
	}
	f = Failure{ExitCode: 1, Reason: p.Status.Reason}
	// A Slurm job's task container (or a pod's only one) decides; among a manifest pod's
	// containers, the first that failed.
	var end *corev1.ContainerStateTerminated
	for _, c := range p.Status.ContainerStatuses {
		t := c.State.Terminated
		if t == nil {
			continue
		}
		if c.Name == JobContainer || len(p.Status.ContainerStatuses) == 1 {
			end = t
			break
		}
		if end == nil && t.ExitCode != 0 {
			end = t
		}
	}
	if end != nil {
		f.ExitCode, f.Signal = end.ExitCode, end.Signal
		if f.Reason == "" {
			f.Reason = end.Reason
		}
	}
	return f, true
}

// FirstFailure is the failure of the first failed pod by name, so the answer does not
// depend on the order pods were listed in; ok is false when none failed.
func FirstFailure(pods []*corev1.Pod) (Failure, bool) {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Name < sorted[b].Name })
	for _, p := range sorted {
		if f, ok := FailureOf(p); ok {
			return f, true
		}
	}
	return Failure{}, false
}

// FailedState is the Slurm state of a job that failed for reason (a pod's or container's
// Kubernetes reason, or a node failure's DisruptionTarget reason).
func FailedState(reason string) State {
	switch reason {
	case "OOMKilled":
		return OutOfMemory
	case "DeadlineExceeded":
		return Timeout
	case "NodeLost", "NodeShutdown", "DeletionByTaintManager", "DeletionByPodGC", "TerminationByKubelet", NodeFailReason:
		return NodeFail
	}
	return Failed
}

// NodeFailReason is the end reason the Slurm lifecycle writes for a job lost with its
// node (status.endReason).
const NodeFailReason = "NodeFail"

// nodeFailure is the reason a pod of the group (terminating ones too) was removed by a
// node failure: the DisruptionTarget condition the taint manager, pod GC or kubelet set,
// the NodeLost status reason, or NodeFailReason for a pod of the current run drained off
// a faulty node (its DisruptionTarget says only EvictionByEvictionAPI: the fault mark
// tells it from a preemption, as in Disruption); "" when none was. A gang drained off a
// fault whose other pods then fail by themselves (their peer is gone) ended with the node,
// not FAILED.
func nodeFailure(pg *v1alpha1.PodGroup, pods []*corev1.Pod) string {
	for _, p := range pods {
		if p.Status.Reason == "NodeLost" {
			return p.Status.Reason
		}
		if drainedOffFault(p) && inCurrentRun(pg, p) {
			return NodeFailReason
		}
		if pressureEvicted(p) {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Reason {
			case "DeletionByTaintManager", "DeletionByPodGC", "TerminationByKubelet":
				return c.Reason
			}
		}
	}
	return ""
}

// LastFinish is when the last container of the pods finished; zero when none has.
func LastFinish(pods []*corev1.Pod) time.Time {
	var last time.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
	}
	return last
}

// earliestStart is the earliest start of the bound pods; zero when none started.
func earliestStart(pods []*corev1.Pod) time.Time {
	var first time.Time
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.StartTime == nil {
			continue
		}
		if t := p.Status.StartTime.Time; first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}
