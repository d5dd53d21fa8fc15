package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// runningJob is a started 2-node job whose pods are as given.
func runningJob(requeue bool) *v1alpha1.PodGroup {
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "nlp", Nodes: 2, Tasks: 2, CPUsPerTask: 1, Requeue: requeue}, 9)
	start := metav1.NewTime(t0)
	pg.Status.Phase, pg.Status.StartTime = v1alpha1.PodGroupRunning, &start
	return pg
}

type podState func(*corev1.Pod)

func jobPod(pg *v1alpha1.PodGroup, i int, node string, states ...podState) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: PodName(pg, i), Labels: map[string]string{NodeIndexLabel: string(rune('0' + i))},
		CreationTimestamp: metav1.NewTime(t0)}}
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	for _, s := range states {
		s(p)
	}
	return p
}

func ended(code int32, at time.Time) podState {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}}}}
	}
}

func disruptedBy(reason string) podState {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	}
}

func TestJudge(t *testing.T) {
	now := t0.Add(time.Minute)
	tests := []struct {
		name      string
		pg        *v1alpha1.PodGroup
		pods      func(pg *v1alpha1.PodGroup) []*corev1.Pod
		seen      jobstate.State
		limit     time.Duration
		phase     v1alpha1.PodGroupPhase
		code      int32 // checked when phase is Succeeded or Failed from a task
		requeue   bool
		deletes   bool
		nodes     []string
		recheckIn time.Duration
	}{{
		name: "running pods record their nodes in node order and wait for the limit", pg: runningJob(false), limit: time.Hour,
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 1, "n2"), jobPod(pg, 0, "n1")}
		},
		nodes: []string{"n1", "n2"}, recheckIn: 59 * time.Minute,
	}, {
		name: "all nodes succeeded: COMPLETED with 0", pg: runningJob(false),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1", ended(0, t0.Add(5*time.Second))), jobPod(pg, 1, "n2", ended(0, t0.Add(6*time.Second)))}
		},
		phase: v1alpha1.PodGroupSucceeded, code: 0, nodes: []string{"n1", "n2"},
	}, {
		name: "one node still running: not done yet", pg: runningJob(false),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1", ended(0, t0)), jobPod(pg, 1, "n2")}
		},
		nodes: []string{"n1", "n2"},
	}, {
		name: "a failed task ends the job FAILED with its code and stops the rest", pg: runningJob(false),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1"), jobPod(pg, 1, "n2", ended(42, t0))}
		},
		phase: v1alpha1.PodGroupFailed, code: 42, deletes: true, nodes: []string{"n1", "n2"},
	}, {
		name: "past the time limit: TIMEOUT, pods deleted", pg: runningJob(false), limit: 30 * time.Second,
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1"), jobPod(pg, 1, "n2")}
		},
		phase: v1alpha1.PodGroupTimedOut, deletes: true, nodes: []string{"n1", "n2"},
	}, {
		name: "a kubelet's DeadlineExceeded is TIMEOUT", pg: runningJob(false),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1", func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "DeadlineExceeded" }), jobPod(pg, 1, "n2")}
		},
		phase: v1alpha1.PodGroupTimedOut, deletes: true, nodes: []string{"n1", "n2"},
	}, {
		name: "evicted with --requeue: back to PENDING", pg: runningJob(true),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1", disruptedBy("EvictionByEvictionAPI")), jobPod(pg, 1, "n2")}
		},
		requeue: true, deletes: true,
	}, {
		// Node pressure killed the task for what it used: the job FAILED, as in Slurm,
		// and is not requeued as a node failure would be.
		name: "evicted by the kubelet for node pressure, with --requeue: FAILED", pg: runningJob(true),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1", ended(137, t0), disruptedBy("TerminationByKubelet"),
				func(p *corev1.Pod) { p.Status.Reason = jobstate.PressureEvictedReason }), jobPod(pg, 1, "n2")}
		},
		phase: v1alpha1.PodGroupFailed, code: 137, deletes: true, nodes: []string{"n1", "n2"},
	}, {
		name: "evicted without --requeue: PREEMPTED", pg: runningJob(false),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1", disruptedBy("EvictionByEvictionAPI")), jobPod(pg, 1, "n2")}
		},
		phase: v1alpha1.PodGroupPreempted, deletes: true, nodes: []string{"n1", "n2"},
	}, {
		name: "node lost without --requeue: FAILED", pg: runningJob(false), seen: jobstate.NodeFail,
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 1, "n2")}
		},
		phase: v1alpha1.PodGroupFailed, deletes: true,
	}, {
		name: "pods of an earlier run are not this run's", pg: func() *v1alpha1.PodGroup { pg := runningJob(false); pg.Status.Requeues = 1; return pg }(),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			old := runningJob(false)
			return []*corev1.Pod{jobPod(old, 0, "n1", ended(3, t0)), jobPod(pg, 0, "n3"), jobPod(pg, 1, "n4")}
		},
		nodes: []string{"n3", "n4"},
	}, {
		name: "a cancelled job's pod that still runs is deleted", pg: func() *v1alpha1.PodGroup {
			pg := runningJob(false)
			pg.Status.Phase = v1alpha1.PodGroupCancelled
			return pg
		}(),
		pods: func(pg *v1alpha1.PodGroup) []*corev1.Pod {
			return []*corev1.Pod{jobPod(pg, 0, "n1")}
		},
		deletes: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(tc.pg, tc.pods(tc.pg), tc.seen, tc.limit, now)
			if v.phase != tc.phase || v.requeue != tc.requeue || v.deletePods != tc.deletes || v.recheckIn != tc.recheckIn {
				t.Errorf("verdict %+v; want phase %q requeue %v deletes %v recheck %v", v, tc.phase, tc.requeue, tc.deletes, tc.recheckIn)
			}
			if len(v.nodes) != len(tc.nodes) || (len(tc.nodes) > 0 && v.nodes[0] != tc.nodes[0]) {
				t.Errorf("nodes %v, want %v", v.nodes, tc.nodes)
			}
			if tc.phase == v1alpha1.PodGroupSucceeded || tc.code != 0 {
				if v.exitCode == nil || *v.exitCode != tc.code {
					t.Errorf("exit code %v, want %d", v.exitCode, tc.code)
				}
			}
		})
	}
}
