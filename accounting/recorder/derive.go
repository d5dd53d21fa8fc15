package recorder

import (
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// manifestIDBase starts the job ids derived for manifest workloads that carry no job id
// label: above every Slurm id (uint32), below 2^53 so JavaScript reads them exactly.
const manifestIDBase = int64(1) << 32

// JobID is the ledger id of a PodGroup: its sluice.dev/job-id label, else a number derived
// from the group's UID, the same after every restart, so a manifest workload is recorded
// once however often it is seen.
func JobID(pg *v1alpha1.PodGroup) int64 {
	if id := v1alpha1.JobIDOf(pg.Labels); id > 0 {
		return int64(id)
	}
	h := fnv.New64a()
	h.Write([]byte(pg.UID))
	return manifestIDBase + int64(h.Sum64()&(1<<52-1))
}

// awaitsJobID: a PodGroup a user wrote (no owner, no Slurm job) that has no job id yet.
// The pod grouper numbers it when its first pod comes (podgrouper/usergroup.go); recorded
// before, it would be in the ledger twice, under an id derived from its UID and then
// under its job id. Groups the pod grouper makes are owned by their workload.
func awaitsJobID(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm == nil && len(pg.OwnerReferences) == 0 && v1alpha1.JobIDOf(pg.Labels) == 0
}

// derive computes a workload's ledger record and the transitions its objects show: the
// PodGroup and the pods that belong to it. prev is what the ledger already holds (nil when
// nothing): it keeps the allocation of a job whose pods are gone, and the requeue count
// already recorded. now stamps changes the objects carry no time for.
func derive(pg *v1alpha1.PodGroup, pods []*corev1.Pod, prev *accounting.Job, now time.Time) (accounting.Job, []accounting.Transition) {
	id := JobID(pg)
	j := accounting.Job{
		JobID: id, ArrayTaskID: -1, Name: jobName(pg), User: v1alpha1.ManifestUser(pg.Namespace),
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
	j.Reservation = reservationOf(pg, pods)
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

	// The one job read model decides the state; the ledger adds what the objects no
	// longer show (prev's end) through ledgerState.
	v := jobstate.Derive(pg, pods, now)
	ts := []accounting.Transition{{JobID: id, At: j.Submit, State: accounting.StatePending}}
	add := func(at time.Time, st jobstate.State, reason string) {
		ts = append(ts, accounting.Transition{JobID: id, At: at.UTC().Truncate(time.Second), State: accounting.JobState(st), Reason: reason})
	}
	if r, ok := jobstate.LastRequeue(pg); ok {
		for _, at := range unseenRequeues(pg, prev, r.At) {
			add(at, jobstate.Requeued, "requeued (seen only by its count: recorded at most this late)")
		}
		add(r.At, jobstate.Requeued, r.Reason)
	}
	if !v.Start.IsZero() {
		add(v.Start, jobstate.Running, "")
	}
	sameRun := prev != nil && prev.State.Closed() && int(pg.Status.Requeues) <= prev.RequeueCount
	if v.State.Final() && !sameRun {
		add(v.End, v.State, "")
		j.ExitCode, j.ExitSignal = int(v.ExitCode), int(v.Signal)
	} else if prev != nil && prev.State.Closed() {
		// The ledger holds how this run ended; what the objects show later (a finished
		// pod deleted, its written PodGroup gone with it) never ends it a second time.
		// It ended before and its pods no longer show how (deleted since).
		j.ExitCode, j.ExitSignal = prev.ExitCode, prev.ExitSignal
	}
	j.State, j.End = ledgerState(prev, ts)
	return j, ts
}

// unseenRequeues are the times to record the Slurm job's requeues before its last (at
// last) that the ledger does not hold: the object keeps only the last requeue's time, so
// two requeues between two flushes (or while the recorder was down) show as a count that
// rose by two. Each is recorded one second before the next, the latest it can have
// happened, so the ledger counts every requeue (Slurm's sacct counts each restart).
func unseenRequeues(pg *v1alpha1.PodGroup, prev *accounting.Job, last time.Time) []time.Time {
	recorded := 0
	if prev != nil {
		recorded = prev.RequeueCount
	}
	var out []time.Time
	for k := int(pg.Status.Requeues) - recorded - 1; k > 0; k-- {
		out = append(out, last.Add(-time.Duration(k)*time.Second))
	}
	return out
}

// ledgerState is the state (and end, when final) the ledger holds once ts is written
// over prev: the ledger derives it from the whole history, of which prev's end is the
// part the objects may no longer show (a pod deleted after it finished).
func ledgerState(prev *accounting.Job, ts []accounting.Transition) (accounting.JobState, time.Time) {
	hist := ts
	if prev != nil && prev.State.Closed() && !prev.End.IsZero() {
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

// podTRES is one pod's request: whole GPUs from nvidia.com/gpu or, for a pod whose GPUs
// come through resource claims (DRA), from the assignment the scheduler wrote as it bound
// it; a share from KAI's annotations.
func podTRES(p *corev1.Pod) accounting.TRES {
	var t accounting.TRES
	for _, c := range p.Spec.Containers {
		t.CPUs += cpus(c.Resources.Requests.Cpu())
		t.MemMB += c.Resources.Requests.Memory().Value() >> 20
		if g, ok := c.Resources.Requests[v1alpha1.GPUResource]; ok {
			t.GPUs += float64(g.Value())
		}
	}
	t.GPUs += v1alpha1.ClaimedGPUs(p)
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

// allocatedTRES is what the bound pods hold: CPU and memory as requested, GPUs as the
// binder assigned them (devices times portion, with their memory), else as requested; and
// the nodes they run on.
func allocatedTRES(live []*corev1.Pod) (accounting.TRES, string) {
	var t accounting.TRES
	nodes := map[string]bool{}
	for _, p := range live {
		pt := podTRES(p)
		if a, ok, err := v1alpha1.GPUAssignmentOf(p.Annotations); ok && err == nil && len(a.GPUs) > 0 {
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

// reservationOf is the advance reservation the job runs in: its PodGroup's (Slurm jobs,
// PodGroups users write), else its pods' (a workload grouped from its pods).
func reservationOf(pg *v1alpha1.PodGroup, pods []*corev1.Pod) string {
	if r := v1alpha1.ReservationOf(pg.Labels, pg.Annotations); r != "" {
		return r
	}
	for _, p := range pods {
		if r := v1alpha1.ReservationOf(p.Labels, p.Annotations); r != "" {
			return r
		}
	}
	return ""
}
