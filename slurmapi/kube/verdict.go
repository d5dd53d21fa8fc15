package kube

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// verdict is what the lifecycle controller does to a Slurm job after
// looking at its pods: at most one status change, and whether the job's
// pods go.
type verdict struct {
	phase      v1alpha1.PodGroupPhase // the new phase, "" for no change
	exitCode   *int32
	endReason  string // why a failed job failed (status.endReason)
	endTime    time.Time
	requeue    bool     // back to Pending with one more requeue
	deletePods bool     // delete the job's remaining pods
	nodes      []string // nodes to record, nil for no change
	recheckIn  time.Duration
}

// currentRun keeps the pods of the job's current run (older runs' pods
// may still be terminating after a requeue), ordered by node index.
func currentRun(pg *v1alpha1.PodGroup, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		i, err := v1alpha1.ParseNodeIndex(p.Labels[NodeIndexLabel])
		if err == nil && p.Name == jobstate.PodName(pg, i) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		x, _ := v1alpha1.ParseNodeIndex(a.Labels[NodeIndexLabel])
		y, _ := v1alpha1.ParseNodeIndex(b.Labels[NodeIndexLabel])
		return x - y
	})
	return out
}

// judge decides a Slurm job's next state from its pods: lost to a
// disruption (requeued, or ended PREEMPTED / NODE_FAIL), past its time
// limit (TIMEOUT), a task failed (FAILED with its exit code, the rest
// stopped), or every node done (COMPLETED). limit is the job's time limit,
// 0 for none; seen is a disruption noted from a pod that is already gone.
func judge(pg *v1alpha1.PodGroup, pods []*corev1.Pod, seen jobstate.State, limit time.Duration, now time.Time) verdict {
	if jobstate.PhaseFinal(pg.Status.Phase) {
		for _, p := range pods {
			if p.DeletionTimestamp == nil && !jobstate.Ended(p) {
				return verdict{deletePods: true} // e.g. created while the job was being cancelled
			}
		}
		return verdict{}
	}
	run := currentRun(pg, pods)
	var v verdict
	if nodes := nodesOf(run, pg.Spec.MinMember); nodes != nil && !slices.Equal(nodes, pg.Status.Nodes) {
		v.nodes = nodes
	}
	why := seen
	for _, p := range run {
		if d := jobstate.Disruption(p); d != "" && why == "" {
			why = d
		}
	}
	if why != "" {
		v.deletePods, v.endTime = true, now
		switch {
		case pg.Spec.Slurm.Requeue:
			v.requeue, v.nodes = true, nil
		case why == jobstate.Preempted:
			v.phase = v1alpha1.PodGroupPreempted
		default:
			v.phase, v.endReason = v1alpha1.PodGroupFailed, jobstate.NodeFailReason
		}
		return v
	}
	for _, p := range run {
		if p.Status.Reason == "DeadlineExceeded" {
			return timedOut(v, now)
		}
	}
	if start := startOf(pg, run); limit > 0 && !start.IsZero() {
		left := start.Add(limit).Sub(now)
		if left <= 0 {
			return timedOut(v, now)
		}
		v.recheckIn = left
	}
	succeeded := 0
	for _, p := range run {
		switch p.Status.Phase {
		case corev1.PodFailed:
			f, _ := jobstate.FailureOf(p)
			v.phase, v.exitCode, v.endTime, v.deletePods = v1alpha1.PodGroupFailed, &f.ExitCode, endOf(run, now), true
			v.endReason = f.Reason
			return v
		case corev1.PodSucceeded:
			succeeded++
		}
	}
	if succeeded > 0 && succeeded >= int(max(pg.Spec.MinMember, 1)) {
		zero := int32(0)
		v.phase, v.exitCode, v.endTime = v1alpha1.PodGroupSucceeded, &zero, endOf(run, now)
	}
	return v
}

func timedOut(v verdict, now time.Time) verdict {
	v.phase, v.endTime, v.deletePods = v1alpha1.PodGroupTimedOut, now, true
	return v
}

// nodesOf lists the nodes of a run once all its pods are bound.
func nodesOf(run []*corev1.Pod, want int32) []string {
	if len(run) < int(max(want, 1)) {
		return nil
	}
	nodes := make([]string, len(run))
	for i, p := range run {
		if p.Spec.NodeName == "" {
			return nil
		}
		nodes[i] = p.Spec.NodeName
	}
	return nodes
}

// startOf is when the time limit started counting: the group's start
// time, else its run's first pod creation.
func startOf(pg *v1alpha1.PodGroup, run []*corev1.Pod) time.Time {
	if pg.Status.StartTime != nil {
		return pg.Status.StartTime.Time
	}
	var t time.Time
	for _, p := range run {
		if c := p.CreationTimestamp.Time; !c.IsZero() && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	return t
}

// endOf is when the run's last container ended, else now.
func endOf(run []*corev1.Pod, now time.Time) time.Time {
	if t := jobstate.LastFinish(run); !t.IsZero() {
		return t
	}
	return now
}
