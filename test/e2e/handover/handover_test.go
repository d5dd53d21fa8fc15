package handover

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

const (
	podsBound   = "sluice_scheduler_pods_bound_total"
	bindsFailed = "sluice_scheduler_binds_failed_total"
	cycles      = "sluice_scheduler_cycle_duration_seconds_count"
	leads       = "sluice_server_leader"
	// handoverDeadline is the bound, from the kill to the other
	// replica having bound what was submitted meanwhile.
	handoverDeadline = 15 * time.Second
)

// TestKilledLeaderHandsOver runs two `sluice server` processes. While one holds the
// Lease, only it schedules and records: manifest pods and Slurm jobs submitted to either
// replica are bound by the leader, and the follower binds nothing and runs no
// cycle, and its sacct lists what the leader recorded. Then the leader is killed with SIGKILL (no Lease release) and more
// work is submitted: the other replica takes the Lease and binds it. Nothing
// is bound twice: the pods bound before keep their node and UID, each Slurm
// job has one pod, and the new leader's bind counter is exactly the new
// work with no refused bind (a rebind of a bound pod is refused).
func TestKilledLeaderHandsOver(t *testing.T) {
	p := startPair(t)
	rig, ns, leader, follower := p.rig, p.ns, p.leader, p.follower

	// While the leader lives: pods, and a Slurm job through each replica's REST API.
	before := createPods(t, rig, ns, "before", 3)
	jobs := []int{submitJob(t, leader, p.key), submitJob(t, follower, p.key)}
	boundBefore := waitBound(t, rig, ns, before, jobs, time.Minute)
	leader.awaitMetric(t, podsBound, float64(len(boundBefore)), "the leader counts every pod it bound")
	if got := leader.mustMetric(t, leads); got != 1 {
		t.Errorf("leader %s: %s = %v, want 1", leader.Name(), leads, got)
	}
	for _, name := range []string{leads, podsBound, bindsFailed, cycles} {
		if got := follower.mustMetric(t, name); got != 0 {
			t.Errorf("follower %s: %s = %v, want 0 (only the leader schedules)", follower.Name(), name, got)
		}
	}
	// Only the leader records; the follower's sacct reads what it wrote.
	follower.awaitSacct(t, p.key, jobs)
	if !leader.recorderStarted() || follower.recorderStarted() {
		t.Errorf("accounting recorder started on leader %s: %v, on follower %s: %v; want only on the leader",
			leader.Name(), leader.recorderStarted(), follower.Name(), follower.recorderStarted())
	}

	killed := time.Now()
	leader.Kill(t)
	after := createPods(t, rig, ns, "after", 3)
	jobs = append(jobs, submitJob(t, follower, p.key))
	boundAll := waitBound(t, rig, ns, append(before, after...), jobs, handoverDeadline-time.Since(killed))
	handover := time.Since(killed)
	lease, err := p.getLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != follower.identity {
		t.Fatalf("Lease holder %v after the kill, want %s", h, follower.identity)
	}
	t.Logf("hand-over after SIGKILL: Lease taken by %s after %s, new work bound after %s (lease %v)",
		follower.Name(), lease.Spec.AcquireTime.Sub(killed).Round(time.Millisecond), handover.Round(time.Millisecond), leaseTimings)

	// Two more cycles: a new leader that would rebind or recreate old work has done so by now.
	settled := follower.mustMetric(t, cycles) + 2
	e2e.WaitFor(t, follower.Name()+" runs two more cycles", 30*time.Second, func(ctx context.Context) (bool, error) {
		m, err := follower.metrics(ctx)
		return err == nil && m[cycles] >= settled, err
	})
	for key, was := range boundBefore {
		now := boundAll[key]
		if now.UID != was.UID || now.Spec.NodeName != was.Spec.NodeName {
			t.Errorf("%s was %s on %s before the hand-over, %s on %s after", key, was.UID, was.Spec.NodeName, now.UID, now.Spec.NodeName)
		}
	}
	for _, id := range jobs {
		if pods := jobPods(t, rig, id); len(pods) != 1 {
			t.Errorf("Slurm job %d has %d pods after the hand-over, want 1: %v", id, len(pods), podKeys(pods))
		}
	}
	if got := follower.mustMetric(t, leads); got != 1 {
		t.Errorf("new leader %s: %s = %v, want 1", follower.Name(), leads, got)
	}
	newWork := float64(len(boundAll) - len(boundBefore))
	follower.awaitMetric(t, podsBound, newWork, "the new leader bound only what was submitted after the kill")
	if got := follower.mustMetric(t, bindsFailed); got != 0 {
		t.Errorf("new leader %s had %v binds refused: it tried to bind pods already bound", follower.Name(), got)
	}
	// The new leader records from now on, into the ledger the old one filled.
	if !follower.recorderStarted() {
		t.Errorf("new leader %s did not start the accounting recorder", follower.Name())
	}
	follower.awaitSacct(t, p.key, jobs)
}

// TestLeaderReleasesLeaseOnSIGTERM is a rolling update: the leader gets
// SIGTERM, exits cleanly and gives the Lease up on its way out, so the other
// replica takes it without waiting for it to expire, and binds new pods.
func TestLeaderReleasesLeaseOnSIGTERM(t *testing.T) {
	p := startPair(t)
	held, err := p.getLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Unreleased, the Lease could not be taken before this.
	expiry := held.Spec.RenewTime.Add(time.Duration(*held.Spec.LeaseDurationSeconds) * time.Second)

	terminated := time.Now()
	if code := p.leader.Terminate(t); code != 0 {
		t.Errorf("%s exited %d after SIGTERM, want 0", p.leader.Name(), code)
	}
	pods := createPods(t, p.rig, p.ns, "after", 3)
	waitBound(t, p.rig, p.ns, pods, nil, handoverDeadline-time.Since(terminated))
	bound := time.Since(terminated)
	l, err := p.getLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h != p.follower.identity {
		t.Fatalf("Lease holder %v after SIGTERM, want %s", h, p.follower.identity)
	}
	if !l.Spec.AcquireTime.Time.Before(expiry) {
		t.Errorf("%s took the Lease at %s, not before the old one expired (%s): %s did not release it",
			p.follower.Name(), l.Spec.AcquireTime.Format(time.StampMilli), expiry.Format(time.StampMilli), p.leader.Name())
	}
	t.Logf("hand-over after SIGTERM: Lease taken by %s after %s, new pods bound after %s",
		p.follower.Name(), l.Spec.AcquireTime.Sub(terminated).Round(time.Millisecond), bound.Round(time.Millisecond))
	if got := p.follower.mustMetric(t, leads); got != 1 {
		t.Errorf("new leader %s: %s = %v, want 1", p.follower.Name(), leads, got)
	}
	p.follower.awaitMetric(t, podsBound, float64(len(pods)), "the new leader bound the new pods")
}

// serverNamespace holds the replicas' Lease and the Slurm job id counter:
// the server's default, so job ids stay unique across the rig's tests.
const serverNamespace = "sluice-system"

// pair is two replicas sharing a Lease, with the rig, the site and a
// namespace for the test's pods.
type pair struct {
	rig              *cluster.Cluster
	ns               string
	lease            string // its name, one per test
	key              []byte // the replicas' shared JWT key
	leader, follower *replica
}

// startPair starts two replicas and returns once one holds the Lease.
func startPair(t *testing.T) *pair {
	t.Helper()
	rig := e2e.Rig(t)
	ctl := sluiceproc.InstallSite(t, rig.RESTConfig())
	p := &pair{rig: rig, ns: e2e.TeamNamespace(t, rig, "nlp"), key: bytes.Repeat([]byte("h"), 32)}
	p.lease = "handover-" + p.ns
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "jwt.key")
	if err := os.WriteFile(keyFile, p.key, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deleteSlurmJobs(ctl)
		_ = rig.Client().CoordinationV1().Leases(serverNamespace).Delete(context.Background(), p.lease, metav1.DeleteOptions{})
	})
	ledger := filepath.Join(dir, "ledger.db")
	a := startReplica(t, "replica-a", replicaConfig(rig.Kubeconfig, filepath.Join(dir, "a"), ledger, serverNamespace, p.lease, keyFile))
	b := startReplica(t, "replica-b", replicaConfig(rig.Kubeconfig, filepath.Join(dir, "b"), ledger, serverNamespace, p.lease, keyFile))
	p.leader, p.follower = waitLeader(t, p, a, b)
	t.Logf("%s leads, %s follows", p.leader.Name(), p.follower.Name())
	return p
}

func (p *pair) getLease(ctx context.Context) (*coordinationv1.Lease, error) {
	return p.rig.Client().CoordinationV1().Leases(serverNamespace).Get(ctx, p.lease, metav1.GetOptions{})
}

// deleteSlurmJobs removes the test's Slurm jobs (their pods go with their
// PodGroups), so their GPUs are free for a rerun.
func deleteSlurmJobs(c client.Client) {
	_ = c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(kube.Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
}

// waitLeader waits until one of the replicas holds the Lease and returns it first.
func waitLeader(t *testing.T, p *pair, a, b *replica) (leader, follower *replica) {
	t.Helper()
	e2e.WaitFor(t, "a replica holds Lease "+p.lease, time.Minute, func(ctx context.Context) (bool, error) {
		l, err := p.getLease(ctx)
		if err != nil {
			return false, err
		}
		switch h := l.Spec.HolderIdentity; {
		case h == nil:
			return false, fmt.Errorf("no holder")
		case *h == a.identity:
			leader, follower = a, b
		case *h == b.identity:
			leader, follower = b, a
		default:
			return false, fmt.Errorf("held by %q, neither %s nor %s", *h, a.identity, b.identity)
		}
		return true, nil
	})
	return leader, follower
}

// createPods creates n one-GPU pods for Sluice in queue nlp and returns their names.
func createPods(t *testing.T, rig *cluster.Cluster, ns, prefix string, n int) []string {
	t.Helper()
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	var names []string
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
			Spec: corev1.PodSpec{
				SchedulerName: "sluice",
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}},
			},
		}
		if _, err := rig.Client().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
		names = append(names, pod.Name)
	}
	return names
}

// submitJob submits a one-GPU Slurm job as alice through r's REST API and
// returns its id.
func submitJob(t *testing.T, r *replica, key []byte) int {
	t.Helper()
	tok, err := slurmapi.MintToken(key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return e2e.Submit(t, r.Addr(), tok, `{"script":"#!/bin/bash\nnvidia-smi\n","job":{"environment":["PATH=/bin:/usr/bin"],"tres_per_node":"gres/gpu:1"}}`)
}

// waitBound waits until every named pod in ns and every Slurm job's pods
// are bound, and returns them by namespace/name.
func waitBound(t *testing.T, rig *cluster.Cluster, ns string, names []string, jobs []int, timeout time.Duration) map[string]corev1.Pod {
	t.Helper()
	var out map[string]corev1.Pod
	e2e.WaitFor(t, fmt.Sprintf("%d pods and %d Slurm jobs bound", len(names), len(jobs)), timeout, func(ctx context.Context) (bool, error) {
		out = map[string]corev1.Pod{}
		list, err := rig.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			out[p.Namespace+"/"+p.Name] = p
		}
		for _, n := range names {
			if p, ok := out[ns+"/"+n]; !ok || p.Spec.NodeName == "" {
				return false, fmt.Errorf("pod %s not bound", n)
			}
		}
		for _, id := range jobs {
			pods := jobPods(t, rig, id)
			if len(pods) == 0 || pods[0].Spec.NodeName == "" {
				return false, fmt.Errorf("Slurm job %d has no bound pod", id)
			}
			for _, p := range pods {
				out[p.Namespace+"/"+p.Name] = p
			}
		}
		return true, nil
	})
	return out
}

// jobPods lists a Slurm job's pods by its job id label.
func jobPods(t *testing.T, rig *cluster.Cluster, id int) []corev1.Pod {
	t.Helper()
	list, err := rig.Client().CoreV1().Pods(kube.Namespace("nlp")).List(context.Background(),
		metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", v1alpha1.JobIDLabel, id)})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func podKeys(pods []corev1.Pod) []types.NamespacedName {
	out := make([]types.NamespacedName, len(pods))
	for i, p := range pods {
		out[i] = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	return out
}
