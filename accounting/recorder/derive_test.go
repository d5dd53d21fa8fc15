package recorder

import (
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func mt(s int) *metav1.Time { t := metav1.NewTime(at(s)); return &t }

func slurmGroup(id string, mutate func(*v1alpha1.PodGroup)) *v1alpha1.PodGroup {
	gpus := resource.MustParse("2")
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "job-" + id, Namespace: "slurm-nlp", UID: types.UID("uid-job-" + id),
			CreationTimestamp: metav1.NewTime(at(0)), Labels: map[string]string{v1alpha1.JobIDLabel: id}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "nlp", Partition: "h100", QOS: "normal",
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 2, Resources: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"), v1alpha1.GPUResource: gpus}}},
			Slurm: &v1alpha1.SlurmJob{Name: "train", User: "alice", Nodes: 2}},
	}
	if mutate != nil {
		mutate(pg)
	}
	return pg
}

// pod is a bound pod of a group: started at start (-1: not started), in phase, with a
// terminated container when exit >= 0.
func pod(name, node string, start int, phase corev1.PodPhase, exit int32, finished int, ann map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "slurm-nlp", Annotations: ann},
		Spec: corev1.PodSpec{NodeName: node, SchedulerName: "sluice", Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
				corev1.ResourceMemory: resource.MustParse("64Gi"), v1alpha1.GPUResource: resource.MustParse("2")}}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if start >= 0 {
		p.Status.StartTime = mt(start)
	}
	if exit >= 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, StartedAt: *mt(start), FinishedAt: *mt(finished)}}}}
	}
	return p
}

func TestDeriveStatesTimesAndTRES(t *testing.T) {
	two := map[string]string{v1alpha1.GPUAssignmentAnnotation: `{"gpus":[{"index":0},{"index":1}],"portion":1}`}
	half := map[string]string{v1alpha1.GPUAssignmentAnnotation: `{"gpus":[{"index":3}],"portion":0.5,"gpuMemoryMiB":40960}`}
	tests := []struct {
		name      string
		pg        *v1alpha1.PodGroup
		pods      []*corev1.Pod
		prev      *accounting.Job
		want      []accounting.JobState // transition states in order
		wantTimes []int
		wantGPUs  float64
		wantGPUMB int64
		wantNodes string
		wantExit  int
	}{
		{name: "pending Slurm job", pg: slurmGroup("7", nil),
			want: []accounting.JobState{"PENDING"}, wantTimes: []int{0}},
		{name: "running on two nodes", pg: slurmGroup("7", nil),
			pods: []*corev1.Pod{pod("a", "n1", 5, corev1.PodRunning, -1, 0, two), pod("b", "n2", 6, corev1.PodRunning, -1, 0, two)},
			want: []accounting.JobState{"PENDING", "RUNNING"}, wantTimes: []int{0, 5}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "completed when every pod succeeded", pg: slurmGroup("7", nil),
			pods: []*corev1.Pod{pod("a", "n1", 5, corev1.PodSucceeded, 0, 65, two), pod("b", "n2", 5, corev1.PodSucceeded, 0, 70, two)},
			want: []accounting.JobState{"PENDING", "RUNNING", "COMPLETED"}, wantTimes: []int{0, 5, 70}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "failed with the failing container's exit code", pg: slurmGroup("7", nil),
			pods: []*corev1.Pod{pod("a", "n1", 5, corev1.PodSucceeded, 0, 65, two), pod("b", "n2", 5, corev1.PodFailed, 3, 40, two)},
			want: []accounting.JobState{"PENDING", "RUNNING", "FAILED"}, wantTimes: []int{0, 5, 65}, wantGPUs: 4, wantNodes: "n1,n2", wantExit: 3},
		{name: "one pod still running is not finished", pg: slurmGroup("7", nil),
			pods: []*corev1.Pod{pod("a", "n1", 5, corev1.PodSucceeded, 0, 65, two), pod("b", "n2", 5, corev1.PodRunning, -1, 0, two)},
			want: []accounting.JobState{"PENDING", "RUNNING"}, wantTimes: []int{0, 5}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "a GPU share counts its portion and memory", pg: slurmGroup("8", func(pg *v1alpha1.PodGroup) { pg.Spec.MinMember = 1 }),
			pods: []*corev1.Pod{pod("a", "n1", 5, corev1.PodRunning, -1, 0, half)},
			want: []accounting.JobState{"PENDING", "RUNNING"}, wantTimes: []int{0, 5}, wantGPUs: 0.5, wantGPUMB: 40960, wantNodes: "n1"},
		{name: "cancelled through the Slurm API, pods gone", pg: slurmGroup("7", func(pg *v1alpha1.PodGroup) {
			pg.Status.Phase, pg.Status.StartTime, pg.Status.EndTime, pg.Status.Nodes = v1alpha1.PodGroupCancelled, mt(5), mt(30), []string{"n2", "n1"}
		}), want: []accounting.JobState{"PENDING", "RUNNING", "CANCELLED"}, wantTimes: []int{0, 5, 30}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "timed out", pg: slurmGroup("7", func(pg *v1alpha1.PodGroup) {
			pg.Status.Phase, pg.Status.StartTime, pg.Status.EndTime = v1alpha1.PodGroupTimedOut, mt(5), mt(3605)
		}), prev: &accounting.Job{Allocated: accounting.TRES{GPUs: 4, Nodes: 2}, NodeList: "n1,n2"},
			want: []accounting.JobState{"PENDING", "RUNNING", "TIMEOUT"}, wantTimes: []int{0, 5, 3605}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "requeued and running again", pg: slurmGroup("7", func(pg *v1alpha1.PodGroup) {
			pg.Status.Requeues, pg.Status.LastRequeueTime = 1, mt(50)
		}), pods: []*corev1.Pod{pod("c", "n3", 80, corev1.PodRunning, -1, 0, two), pod("d", "n4", 80, corev1.PodRunning, -1, 0, two)},
			want: []accounting.JobState{"PENDING", "REQUEUED", "RUNNING"}, wantTimes: []int{0, 50, 80}, wantGPUs: 4, wantNodes: "n3,n4"},
		{name: "node lost under a Slurm job (the lifecycle controller marks it Failed)", pg: slurmGroup("7", func(pg *v1alpha1.PodGroup) {
			pg.Status.Phase, pg.Status.EndTime, pg.Status.Nodes = v1alpha1.PodGroupFailed, mt(90), []string{"n1", "n2"}
		}), pods: func() []*corev1.Pod {
			p := pod("a", "n1", 5, corev1.PodRunning, -1, 0, two)
			p.DeletionTimestamp = mt(90)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
			return []*corev1.Pod{p}
		}(), want: []accounting.JobState{"PENDING", "RUNNING", "NODE_FAIL"}, wantTimes: []int{0, 5, 90}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "preempted for good", pg: slurmGroup("7", func(pg *v1alpha1.PodGroup) {
			pg.Status.Phase, pg.Status.StartTime, pg.Status.EndTime, pg.Status.Nodes = v1alpha1.PodGroupPreempted, mt(5), mt(60), []string{"n1", "n2"}
			pg.Status.Conditions = []metav1.Condition{{Type: "Evicted", Status: "True", Reason: "Preempt", LastTransitionTime: *mt(58)}}
		}), want: []accounting.JobState{"PENDING", "RUNNING", "PREEMPTED"}, wantTimes: []int{0, 5, 60}, wantGPUs: 4, wantNodes: "n1,n2"},
		{name: "OOM killed", pg: slurmGroup("8", func(pg *v1alpha1.PodGroup) { pg.Spec.MinMember = 1 }),
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := pod("a", "n1", 5, corev1.PodFailed, 137, 9, two)
				p.Status.ContainerStatuses[0].State.Terminated.Reason = "OOMKilled"
				return p
			}()},
			want: []accounting.JobState{"PENDING", "RUNNING", "OUT_OF_MEMORY"}, wantTimes: []int{0, 5, 9}, wantGPUs: 2, wantNodes: "n1", wantExit: 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slurmRun(tt.pg, tt.pods)
			j, ts := derive(tt.pg, tt.pods, tt.prev, at(10000))
			if len(ts) != len(tt.want) {
				t.Fatalf("transitions %+v, want states %v", ts, tt.want)
			}
			for i, tr := range ts {
				if tr.State != tt.want[i] || !tr.At.Equal(at(tt.wantTimes[i])) {
					t.Errorf("transition %d: %s at %s, want %s at %s", i, tr.State, tr.At, tt.want[i], at(tt.wantTimes[i]))
				}
			}
			if j.Allocated.GPUs != tt.wantGPUs || j.Allocated.GPUMemMB != tt.wantGPUMB || j.NodeList != tt.wantNodes {
				t.Errorf("allocated %+v on %q, want %v GPUs, %d MB GPU memory on %q", j.Allocated, j.NodeList, tt.wantGPUs, tt.wantGPUMB, tt.wantNodes)
			}
			if j.ExitCode != tt.wantExit {
				t.Errorf("exit code %d, want %d", j.ExitCode, tt.wantExit)
			}
			if j.User != "alice" || j.Account != "nlp" || j.Partition != "h100" || j.Origin != accounting.OriginSlurm || j.Name != "train" {
				t.Errorf("job %+v: want alice's nlp job train on h100 from slurm", j)
			}
			if err := j.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDeriveRequestedFromMembers(t *testing.T) {
	j, _ := derive(slurmGroup("7", nil), nil, nil, at(1))
	want := accounting.TRES{CPUs: 16, MemMB: 2 * 65536, GPUs: 4, Nodes: 2}
	if j.Requested != want {
		t.Errorf("requested %+v, want %+v", j.Requested, want)
	}
}

// slurmRun names pods as the Slurm API names its job's current run (jobstate.PodName),
// in order.
func slurmRun(pg *v1alpha1.PodGroup, pods []*corev1.Pod) {
	for i, p := range pods {
		p.Name = jobstate.PodName(pg, i)
		p.Labels = map[string]string{v1alpha1.NodeIndexLabel: strconv.Itoa(i)}
	}
}

// A requeue is recorded at the time the lifecycle stamped on the group, whatever the
// recorder wrote before. This reproduces a missed requeue: the old rule added REQUEUED only
// while the group's requeue count was above the count of the previous write (prev), so
// once prev counted the requeue without the ledger holding its transition (a write of
// the new count whose derive saw no prev, or a prev read back after a close), no REQUEUED
// was ever written; and deriving again must add no second one.
func TestDeriveRequeueFromTheGroupNotThePreviousWrite(t *testing.T) {
	pg := slurmGroup("7", func(pg *v1alpha1.PodGroup) {
		pg.Status.Phase, pg.Status.Requeues, pg.Status.LastRequeueTime = v1alpha1.PodGroupRunning, 1, mt(50)
	})
	pods := []*corev1.Pod{pod("a", "n3", 80, corev1.PodRunning, -1, 0, nil), pod("b", "n4", 81, corev1.PodRunning, -1, 0, nil)}
	slurmRun(pg, pods)
	prev := &accounting.Job{JobID: 7, State: accounting.StateRunning, RequeueCount: 1}
	for range 2 {
		j, ts := derive(pg, pods, prev, at(500))
		var states []accounting.JobState
		for _, tr := range ts {
			states = append(states, tr.State)
		}
		want := []accounting.JobState{"PENDING", "REQUEUED", "RUNNING"}
		if !slices.Equal(states, want) || !ts[1].At.Equal(at(50)) || !ts[2].At.Equal(at(80)) {
			t.Fatalf("transitions %+v, want %v at 0, 50, 80", ts, want)
		}
		if j.RequeueCount != 1 || j.State != accounting.StateRunning {
			t.Errorf("job %s with %d requeues, want RUNNING with 1", j.State, j.RequeueCount)
		}
		prev = &j
	}
}

// The old run's pods, still terminating or not yet deleted after the requeue, do not
// make the requeued job look running.
func TestDeriveRequeuedJobIgnoresTheOldRun(t *testing.T) {
	old := slurmGroup("7", nil)
	pods := []*corev1.Pod{pod("a", "n1", 5, corev1.PodRunning, -1, 0, nil), pod("b", "n2", 5, corev1.PodRunning, -1, 0, nil)}
	slurmRun(old, pods)
	pg := slurmGroup("7", func(pg *v1alpha1.PodGroup) {
		pg.Status.Phase, pg.Status.Requeues, pg.Status.LastRequeueTime = v1alpha1.PodGroupPending, 1, mt(50)
	})
	j, ts := derive(pg, pods, &accounting.Job{JobID: 7, State: accounting.StateRunning}, at(60))
	if len(ts) != 2 || ts[1].State != accounting.StateRequeued || j.State != accounting.StateRequeued {
		t.Errorf("transitions %+v, state %s; want PENDING, REQUEUED", ts, j.State)
	}
}

func TestJobIDOfManifestGroupIsStable(t *testing.T) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train-1a2b", UID: "0f0e0d0c-1111-2222-3333-444455556666"}}
	a, b := JobID(pg), JobID(pg.DeepCopy())
	if a != b || a <= int64(1)<<32 || a >= int64(1)<<53 {
		t.Errorf("manifest ids %d, %d: want one id in (2^32, 2^53)", a, b)
	}
	pg.Labels = map[string]string{v1alpha1.JobIDLabel: "42"}
	if JobID(pg) != 42 {
		t.Errorf("labelled group id %d, want 42", JobID(pg))
	}
}

// A manifest workload asks through its pods: KAI's gpu-fraction and gpu-memory
// annotations count as shares of a device.
func TestDeriveRequestedFromPodAnnotations(t *testing.T) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "infer-9f8e", Namespace: "team", UID: "u1",
		CreationTimestamp: metav1.NewTime(at(0)), OwnerReferences: []metav1.OwnerReference{{Name: "infer", UID: "job-uid"}}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "vision"}}
	tests := []struct {
		ann     map[string]string
		gpus    float64
		gpuMemB int64
	}{
		{map[string]string{v1alpha1.GPUFractionAnnotation: "0.25"}, 2.25, 0},
		{map[string]string{v1alpha1.GPUFractionAnnotation: "0.5", v1alpha1.GPUFractionNumDevicesAnnotation: "2"}, 3, 0},
		{map[string]string{v1alpha1.GPUMemoryAnnotation: "20480"}, 2, 20480},
		{map[string]string{v1alpha1.GPUFractionAnnotation: "lots"}, 2, 0},
	}
	for _, tt := range tests {
		p := pod("infer-0", "n1", 5, corev1.PodRunning, -1, 0, tt.ann)
		j, _ := derive(pg, []*corev1.Pod{p}, nil, at(100))
		if j.Requested.GPUs != tt.gpus || j.Requested.GPUMemMB != tt.gpuMemB || j.Name != "infer" || j.User != "ns:team" || j.Origin != "kubernetes" {
			t.Errorf("annotations %v: requested %+v, job %s by %s from %s; want %v GPUs, %d MB", tt.ann, j.Requested, j.Name, j.User, j.Origin, tt.gpus, tt.gpuMemB)
		}
	}
}

// A pod whose GPUs come through resource claims (DRA) asks no nvidia.com/gpu: its GPUs
// are those the scheduler's assignment names, so the ledger charges gres/gpu for them
// as for device-plugin GPUs; a pod with claims and no assignment (none bound, or a
// claim for a NIC) is charged no GPU.
func TestDeriveGPUsOfResourceClaims(t *testing.T) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "dra-1", Namespace: "team", UID: "u1", CreationTimestamp: metav1.NewTime(at(0))},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "vision"}}
	tmpl := "gpus"
	tests := []struct {
		ann  map[string]string
		gpus float64
	}{
		{map[string]string{v1alpha1.GPUAssignmentAnnotation: `{"gpus":[{"index":1,"uuid":"GPU-a"},{"index":3,"uuid":"GPU-b"}],"portion":1}`}, 2},
		{nil, 0},
	}
	for _, tt := range tests {
		p := pod("dra-1-0", "n1", 5, corev1.PodRunning, -1, 0, tt.ann)
		delete(p.Spec.Containers[0].Resources.Requests, v1alpha1.GPUResource)
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &tmpl}}
		j, _ := derive(pg, []*corev1.Pod{p}, nil, at(100))
		if j.Requested.GPUs != tt.gpus || j.Allocated.GPUs != tt.gpus {
			t.Errorf("assignment %v: requested %v GPUs, allocated %v; want %v", tt.ann, j.Requested.GPUs, j.Allocated.GPUs, tt.gpus)
		}
	}
}
