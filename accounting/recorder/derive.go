package recorder

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// conditionEvicted is the PodGroup condition the scheduler sets when it evicts one of the
// group's pods (k8sscheduler/scheduler.ConditionEvicted; the recorder may not import the
// scheduler, only the API types).
const conditionEvicted = v1alpha1.PodGroupConditionEvicted

// manifestIDBase starts the job ids derived for manifest workloads that carry no job id
// label: above every Slurm id (uint32), below 2^53 so JavaScript reads them exactly.
const manifestIDBase = int64(1) << 32

// JobID is the ledger id of a PodGroup: its sluice.dev/job-id label, else a number derived
// from the group's UID, the same after every restart, so a manifest workload is recorded
// once however often it is seen.
func JobID(pg *v1alpha1.PodGroup) int64 {
	if id, err := strconv.ParseInt(pg.Labels[v1alpha1.JobIDLabel], 10, 64); err == nil && id > 0 {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(pg.UID))
	return manifestIDBase + int64(h.Sum64()&(1<<52-1))
}

// derive computes a workload's ledger record and the transitions its objects show: the
// PodGroup and the pods that belong to it. prev is what the ledger already holds (nil when
// nothing): it keeps the allocation of a job whose pods are gone, and the requeue count
// already recorded. now stamps changes the objects carry no time for.
func derive(pg *v1alpha1.PodGroup, pods []*corev1.Pod, prev *accounting.Job, now time.Time) (accounting.Job, []accounting.Transition) {
	id := JobID(pg)
	j := accounting.Job{
		JobID: id, ArrayTaskID: -1, Name: jobName(pg), User: pg.Namespace,
		Account: pg.Spec.Queue, Partition: pg.Spec.Partition, QOS: pg.Spec.QOS,
		Origin: accounting.OriginKubernetes, Namespace: pg.Namespace, PodGroup: pg.Name,
		Submit: pg.SubmitTime().UTC(), Eligible: pg.SubmitTime().UTC(), State: accounting.StatePending,
	}
	if s := pg.Spec.Slurm; s != nil {
		j.Origin, j.User = accounting.OriginSlurm, s.User
		if s.ArrayJobID != nil && s.ArrayTaskID != nil {
			j.ArrayJobID, j.ArrayTaskID = *s.ArrayJobID, int64(*s.ArrayTaskID)
		}
	}
	live := livePods(pods)
	j.Requested = requestedTRES(pg, live)
	j.Allocated, j.NodeList = allocatedTRES(live)
	if j.Allocated == (accounting.TRES{}) {
		j.Allocated, j.NodeList = fallbackAllocation(pg, j.Requested, prev)
	}
	if prev != nil && j.Requested == (accounting.TRES{}) {
		j.Requested = prev.Requested
	}
	j.RequeueCount = int(pg.Status.Requeues)
	if prev != nil && prev.RequeueCount > j.RequeueCount {
		j.RequeueCount = prev.RequeueCount
	}

	ts := []accounting.Transition{{JobID: id, At: j.Submit, State: accounting.StatePending}}
	add := func(at time.Time, st accounting.JobState, reason string) {
		ts = append(ts, accounting.Transition{JobID: id, At: at.UTC().Truncate(time.Second), State: st, Reason: reason})
	}
	start := startTime(pg, live, pods)
	if c := meta.FindStatusCondition(pg.Status.Conditions, conditionEvicted); c != nil && c.Status == "True" {
		// The evicted pods' run ended at the eviction; the group goes back to
		// pending (requeued) unless the eviction ended it for good.
		// A group preempted for good, or a bare pod's, which nothing recreates, is
		// closed by finalState.
		if pg.Status.Phase != v1alpha1.PodGroupPreempted && !barePodGroup(pg) {
			add(c.LastTransitionTime.Time, accounting.StateRequeued, c.Reason+": "+c.Message)
		}
	} else if prev != nil && int(pg.Status.Requeues) > prev.RequeueCount {
		// Requeued through the Slurm API (scontrol requeue): no time on the object.
		for range int(pg.Status.Requeues) - prev.RequeueCount {
			add(now, accounting.StateRequeued, "requeued")
		}
	}
	if !start.IsZero() {
		add(start, accounting.StateRunning, "")
	}
	if st, at, code, sig := finalState(pg, live, pods, now); st != "" {
		add(at, st, "")
		j.ExitCode, j.ExitSignal = code, sig
	} else if prev != nil && prev.State.Final() {
		// It ended before and its pods no longer show how (deleted since).
		j.ExitCode, j.ExitSignal = prev.ExitCode, prev.ExitSignal
	}
	j.State, j.End = ledgerState(prev, ts)
	return j, ts
}

// ledgerState is the state (and end, when final) the ledger holds once ts is written
// over prev: the ledger derives it from the whole history, of which prev's end is the
// part the objects may no longer show (a pod deleted after it finished).
func ledgerState(prev *accounting.Job, ts []accounting.Transition) (accounting.JobState, time.Time) {
	hist := ts
	if prev != nil && prev.State.Final() && !prev.End.IsZero() {
		hist = append(slices.Clip(ts), accounting.Transition{JobID: prev.JobID, At: prev.End, State: prev.State})
	}
	s := accounting.Summarize(hist)
	return s.State, s.End
}

// jobName is the Slurm job name, else the workload that owns the group.
func jobName(pg *v1alpha1.PodGroup) string {
	if s := pg.Spec.Slurm; s != nil && s.Name != "" {
		return s.Name
	}
	if len(pg.OwnerReferences) > 0 {
		return pg.OwnerReferences[0].Name
	}
	return pg.Name
}

// livePods are the pods that hold (or held) a node and are not being replaced.
func livePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// startTime is when the group's current pods began to run: the earliest start of a bound
// pod, else the scheduler's start time, else the earliest start of a pod being removed
// (a run that ended by losing its pods). Live pods come first because the scheduler keeps
// the first start time when evicted pods are replaced, and each run needs its own start.
func startTime(pg *v1alpha1.PodGroup, live, all []*corev1.Pod) time.Time {
	if t := earliestStart(live); !t.IsZero() {
		return t
	}
	if pg.Status.StartTime != nil {
		return pg.Status.StartTime.Time
	}
	return earliestStart(all)
}

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

// finalState says how the group ended, if it has: its phase when final, else from its
// pods once every one of them has terminated. at is the end time, code and sig the exit
// code and signal of the first failing container.
func finalState(pg *v1alpha1.PodGroup, live, all []*corev1.Pod, now time.Time) (st accounting.JobState, at time.Time, code, sig int) {
	code, sig, why := exitOf(live)
	if d := nodeFailure(all); d != "" {
		why = d
	}
	at = lastFinish(all)
	if t := pg.Status.EndTime; t != nil {
		at = t.Time
	}
	if c := pg.Status.ExitCode; c != nil {
		code = int(*c)
	}
	if at.IsZero() {
		at = now
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, conditionEvicted); barePodEvicted(pg, c, live) {
		return accounting.StatePreempted, c.LastTransitionTime.Time, code, sig
	}
	switch pg.Status.Phase {
	case v1alpha1.PodGroupSucceeded:
		return accounting.StateCompleted, at, code, sig
	case v1alpha1.PodGroupFailed:
		if pg.Spec.Slurm != nil && pg.Status.ExitCode == nil { // the lifecycle's mark of a job lost with its node
			return accounting.StateNodeFail, at, code, sig
		}
		return failedState(why), at, code, sig
	case v1alpha1.PodGroupCancelled:
		return accounting.StateCancelled, at, code, sig
	case v1alpha1.PodGroupTimedOut:
		return accounting.StateTimeout, at, code, sig
	case v1alpha1.PodGroupPreempted:
		return accounting.StatePreempted, at, code, sig
	}
	minMember := max(int(pg.Spec.MinMember), 1)
	if len(live) < minMember {
		return "", at, 0, 0
	}
	failed := false
	for _, p := range live {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
		case corev1.PodFailed:
			failed = true
		default:
			return "", at, 0, 0
		}
	}
	if failed {
		return failedState(why), at, code, sig
	}
	return accounting.StateCompleted, at, 0, 0
}

// failedState refines FAILED by why the pod failed.
func failedState(why string) accounting.JobState {
	switch why {
	case "OOMKilled":
		return accounting.StateOutOfMemory
	case "DeadlineExceeded":
		return accounting.StateTimeout
	case "NodeLost", "NodeShutdown", "DeletionByTaintManager", "DeletionByPodGC", "TerminationByKubelet":
		return accounting.StateNodeFail
	}
	return accounting.StateFailed
}

// exitOf is the exit code, signal and reason of the first failed pod (by name, so the
// answer does not depend on informer order).
func exitOf(pods []*corev1.Pod) (code, sig int, why string) {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Name < sorted[b].Name })
	for _, p := range sorted {
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		why = p.Status.Reason
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				if why == "" {
					why = t.Reason
				}
				return int(t.ExitCode), int(t.Signal), why
			}
		}
		return 1, 0, why
	}
	return 0, 0, ""
}

// nodeFailure is the reason a pod of the group (terminating ones too) was removed by a
// node failure: the DisruptionTarget condition the taint manager, pod GC or kubelet set,
// or the NodeLost status reason; "" when none was.
func nodeFailure(pods []*corev1.Pod) string {
	for _, p := range pods {
		if p.Status.Reason == "NodeLost" {
			return p.Status.Reason
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

// lastFinish is when the last container of the pods finished; zero when none has.
func lastFinish(pods []*corev1.Pod) time.Time {
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

// requestedTRES is what the group asks for: from its member sets (a Slurm job), else from
// its pods.
func requestedTRES(pg *v1alpha1.PodGroup, live []*corev1.Pod) accounting.TRES {
	var t accounting.TRES
	if len(pg.Spec.Members) == 0 {
		for _, p := range live {
			t = addTRES(t, podTRES(p))
		}
		t.Nodes = int64(max(pg.Spec.MinMember, 1))
		if len(live) == 0 {
			return accounting.TRES{}
		}
		return t
	}
	for _, m := range pg.Spec.Members {
		n := int64(m.Count)
		t.CPUs += n * cpus(m.Resources.Cpu())
		t.MemMB += n * (m.Resources.Memory().Value() >> 20)
		if g, ok := m.Resources[v1alpha1.GPUResource]; ok {
			t.GPUs += float64(n * g.Value())
		}
		if s := m.GPUSharing; s != nil {
			devs := float64(max(s.Devices, 1))
			if f, err := strconv.ParseFloat(s.Fraction, 64); err == nil {
				t.GPUs += float64(n) * devs * f
			}
			if s.Memory != nil {
				t.GPUMemMB += n * int64(devs) * (s.Memory.Value() >> 20)
			}
		}
	}
	t.Nodes = int64(max(pg.Spec.MinMember, 1))
	return t
}

// podTRES is one pod's request: whole GPUs from nvidia.com/gpu, a share from KAI's
// annotations.
func podTRES(p *corev1.Pod) accounting.TRES {
	var t accounting.TRES
	for _, c := range p.Spec.Containers {
		t.CPUs += cpus(c.Resources.Requests.Cpu())
		t.MemMB += c.Resources.Requests.Memory().Value() >> 20
		if g, ok := c.Resources.Requests[v1alpha1.GPUResource]; ok {
			t.GPUs += float64(g.Value())
		}
	}
	frac, hasFrac := p.Annotations[v1alpha1.GPUFractionAnnotation]
	mem, hasMem := p.Annotations[v1alpha1.GPUMemoryAnnotation]
	if !hasFrac && !hasMem { // whole GPUs only: most pods, so skip the parsing
		return t
	}
	devs := 1.0
	if n, err := strconv.Atoi(p.Annotations[v1alpha1.GPUFractionNumDevicesAnnotation]); err == nil && n > 0 {
		devs = float64(n)
	}
	if f, err := strconv.ParseFloat(frac, 64); hasFrac && err == nil && f > 0 {
		t.GPUs += devs * f
	}
	if m, err := strconv.ParseInt(mem, 10, 64); hasMem && err == nil && m > 0 {
		t.GPUMemMB += int64(devs) * m
	}
	return t
}

// cpus rounds a CPU quantity up to whole CPUs, as Slurm allocates them.
func cpus(q *resource.Quantity) int64 {
	return (q.MilliValue() + 999) / 1000
}

func addTRES(a, b accounting.TRES) accounting.TRES {
	a.CPUs += b.CPUs
	a.MemMB += b.MemMB
	a.GPUs += b.GPUs
	a.GPUMemMB += b.GPUMemMB
	a.Nodes += b.Nodes
	return a
}

// assignment is the JSON of the sluice.dev/gpu-assignment annotation the binder writes
// (k8sscheduler/scheduler.Assignment): the devices and the portion of each.
type assignment struct {
	GPUs []struct {
		Index int32 `json:"index"`
	} `json:"gpus"`
	Portion      float64 `json:"portion"`
	GPUMemoryMiB int64   `json:"gpuMemoryMiB"`
}

// allocatedTRES is what the bound pods hold: CPU and memory as requested, GPUs as the
// binder assigned them (devices times portion, with their memory), else as requested; and
// the nodes they run on.
func allocatedTRES(live []*corev1.Pod) (accounting.TRES, string) {
	var t accounting.TRES
	nodes := map[string]bool{}
	for _, p := range live {
		pt := podTRES(p)
		var a assignment
		if raw, ok := p.Annotations[v1alpha1.GPUAssignmentAnnotation]; ok && json.Unmarshal([]byte(raw), &a) == nil && len(a.GPUs) > 0 {
			pt.GPUs = float64(len(a.GPUs)) * a.Portion
			pt.GPUMemMB = int64(len(a.GPUs)) * a.GPUMemoryMiB
		}
		t = addTRES(t, pt)
		nodes[p.Spec.NodeName] = true
	}
	t.Nodes = int64(len(nodes))
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return t, strings.Join(names, ",")
}

// fallbackAllocation keeps the allocation of a job whose pods are gone: what the ledger
// holds, else (a Slurm job that ran on status.nodes) what it requested.
func fallbackAllocation(pg *v1alpha1.PodGroup, req accounting.TRES, prev *accounting.Job) (accounting.TRES, string) {
	if prev != nil && prev.Allocated != (accounting.TRES{}) {
		return prev.Allocated, prev.NodeList
	}
	if len(pg.Status.Nodes) > 0 && len(pg.Spec.Members) > 0 {
		nodes := append([]string(nil), pg.Status.Nodes...)
		sort.Strings(nodes)
		req.Nodes = int64(len(nodes))
		return req, strings.Join(nodes, ",")
	}
	return accounting.TRES{}, ""
}

// barePodEvicted: the group is a bare pod's (barePodGroup), its Evicted condition c holds
// and the pod no longer runs. Nothing recreates a bare pod, so the eviction ended the job:
// PREEMPTED, never requeued.
func barePodEvicted(pg *v1alpha1.PodGroup, c *metav1.Condition, live []*corev1.Pod) bool {
	return c != nil && c.Status == metav1.ConditionTrue && len(live) == 0 && barePodGroup(pg)
}

// barePodGroup: pg is a bare pod's group, owned by the Pod (as a group of one's written
// PodGroup is, and the pod grouper's group of a bare pod).
func barePodGroup(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm == nil && v1alpha1.OwningPod(pg) != nil
}
