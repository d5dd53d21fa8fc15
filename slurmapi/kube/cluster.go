package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Catalog returns a snapshot of Partitions (with their nodes' count and
// sizes), Queues and QOS at most CatalogTTL old, so submissions cost no
// reads of their own.
func (b *Backend) Catalog(ctx context.Context) (*slurmapi.Catalog, error) {
	b.catMu.Lock()
	defer b.catMu.Unlock()
	if b.catalog != nil && time.Since(b.catAt) < b.opts.CatalogTTL {
		return b.catalog, nil
	}
	parts, queues, qos, err := b.site(ctx)
	if err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := b.c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	cat := CatalogFrom(parts, queues, qos)
	withNodes(cat, parts, nodes.Items)
	if cat.Reservations, err = catalogReservations(ctx, b.c); err != nil {
		return nil, err
	}
	b.catalog, b.catAt = cat, time.Now()
	return b.catalog, nil
}

func (b *Backend) site(ctx context.Context) ([]v1alpha1.Partition, []v1alpha1.Queue, []v1alpha1.QOS, error) {
	var parts v1alpha1.PartitionList
	var queues v1alpha1.QueueList
	var qos v1alpha1.QOSList
	if err := b.c.List(ctx, &parts); err != nil {
		return nil, nil, nil, fmt.Errorf("list Partitions: %w", err)
	}
	if err := b.c.List(ctx, &queues); err != nil {
		return nil, nil, nil, fmt.Errorf("list Queues: %w", err)
	}
	if err := b.c.List(ctx, &qos); err != nil {
		return nil, nil, nil, fmt.Errorf("list QOS: %w", err)
	}
	return parts.Items, queues.Items, qos.Items, nil
}

// Nodes shows every Kubernetes node as a Slurm node, with GPUs from the
// GPU Operator's labels and allocatable, allocation from bound pods.
func (b *Backend) Nodes(ctx context.Context) ([]slurmapi.Node, error) {
	var nodes corev1.NodeList
	if err := b.c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	var pods corev1.PodList
	if err := b.c.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	var parts v1alpha1.PartitionList
	if err := b.c.List(ctx, &parts); err != nil {
		return nil, fmt.Errorf("list Partitions: %w", err)
	}
	resvs, err := listReservations(ctx, b.c)
	if err != nil && !apierrors.IsForbidden(err) { // without the right to read them, nodes show no reservation
		return nil, err
	}
	used := podUsage(pods.Items)
	out := make([]slurmapi.Node, 0, len(nodes.Items))
	for i := range nodes.Items {
		out = append(out, NodeFrom(&nodes.Items[i], used[nodes.Items[i].Name], parts.Items))
	}
	markReserved(out, resvs, nodes.Items, parts.Items, time.Now())
	return out, nil
}

// usage is what the running pods on one node request.
type usage struct {
	cpuMilli, memBytes, gpus int64
}

func podUsage(pods []corev1.Pod) map[string]usage {
	out := map[string]usage{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, idle := p.Labels[v1alpha1.IdleValidationLabel]; idle {
			continue // the node is idle: the validation gives way to the first job
		}
		u := out[p.Spec.NodeName]
		for _, c := range p.Spec.Containers {
			u.cpuMilli += c.Resources.Requests.Cpu().MilliValue()
			u.memBytes += c.Resources.Requests.Memory().Value()
			if g, ok := c.Resources.Requests[v1alpha1.GPUResource]; ok {
				u.gpus += g.Value()
			}
		}
		u.gpus += int64(v1alpha1.ClaimedGPUs(p))
		out[p.Spec.NodeName] = u
	}
	return out
}

// NodeFrom reads a Node as a Slurm node: state IDLE, MIXED or ALLOCATED
// from its allocation, DOWN when not Ready, plus DRAIN when cordoned or
// quarantined (the taint's value is the reason).
func NodeFrom(n *corev1.Node, u usage, parts []v1alpha1.Partition) slurmapi.Node {
	cpus := int(n.Status.Allocatable.Cpu().Value())
	gpus := v1alpha1.NodeGPUCount(n)
	out := slurmapi.Node{
		Name: n.Name, CPUs: cpus, AllocCPUs: int((u.cpuMilli + 999) / 1000),
		MemoryMiB: n.Status.Allocatable.Memory().Value() >> 20, AllocMiB: u.memBytes >> 20,
		Arch: n.Status.NodeInfo.Architecture, OS: n.Status.NodeInfo.OperatingSystem,
		BootTime: n.CreationTimestamp.Time,
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out.Address = a.Address
		}
	}
	out.Features = nodeFeatures(n.Labels)
	if total := gpus; total > 0 {
		model := strings.ToLower(n.Labels[v1alpha1.GPUProductLabel])
		if model == "" {
			model = "gpu"
		}
		out.GRES = fmt.Sprintf("gpu:%s:%d", model, total)
		out.GRESUsed = fmt.Sprintf("gpu:%s:%d", model, u.gpus)
	}
	state := "IDLE"
	switch {
	case !ready(n):
		state = "DOWN"
		out.Reason = "Not responding"
	case u.gpus > 0 && u.gpus >= gpus, cpus > 0 && out.AllocCPUs >= cpus:
		state = "ALLOCATED"
	case u.cpuMilli > 0 || u.gpus > 0:
		state = "MIXED"
	}
	out.State = []string{state}
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.QuarantineTaint {
			out.State = append(out.State, "DRAIN")
			out.Reason, out.ReasonUser = t.Value, "sluice"
			if t.TimeAdded != nil {
				out.ReasonTime = t.TimeAdded.Time
			}
		}
	}
	out.Comment = healthComment(n, &out)
	if n.Spec.Unschedulable && len(out.State) == 1 {
		out.State = append(out.State, "DRAIN")
		if out.Reason == "" {
			out.Reason = "cordoned"
			if reason, user, at := drainRecord(n); reason != "" { // scontrol update State=DRAIN
				out.Reason, out.ReasonUser, out.ReasonTime = reason, user, at
			}
		}
	}
	var topo []string
	for i := range parts {
		if labels.SelectorFromSet(parts[i].Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
			out.Partitions = append(out.Partitions, parts[i].Name)
			for _, level := range parts[i].Spec.Topology {
				if v, ok := n.Labels[level]; ok && !slices.Contains(topo, level+"="+v) {
					topo = append(topo, level+"="+v)
				}
			}
		}
	}
	out.Topology = strings.Join(topo, ",")
	return out
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Partitions shows Partition objects with their node lists.
func (b *Backend) Partitions(ctx context.Context) ([]slurmapi.Partition, error) {
	var parts v1alpha1.PartitionList
	if err := b.c.List(ctx, &parts); err != nil {
		return nil, fmt.Errorf("list Partitions: %w", err)
	}
	var nodes corev1.NodeList
	if err := b.c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	out := make([]slurmapi.Partition, 0, len(parts.Items))
	for i := range parts.Items {
		p := PartitionFrom(&parts.Items[i])
		sel := labels.SelectorFromSet(parts.Items[i].Spec.NodeSelector)
		var names []string
		cpus, gpus := 0, 0
		for j := range nodes.Items {
			n := &nodes.Items[j]
			if sel.Matches(labels.Set(n.Labels)) {
				names = append(names, n.Name)
				cpus, gpus = cpus+int(n.Status.Allocatable.Cpu().Value()), gpus+int(v1alpha1.NodeGPUCount(n))
			}
		}
		p.Nodes, p.NodeCount = sbatch.HostList(names), len(names)
		// TotalCPUs and TRES count the nodes the partition has now, as Slurm's do.
		p.CPUs, p.GPUs = cpus, gpus
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Diag counts jobs by their state in the job model, as sdiag does.
func (b *Backend) Diag(ctx context.Context) (slurmapi.Diag, error) {
	jobs, err := b.Jobs(ctx, slurmapi.JobFilter{})
	if err != nil {
		return slurmapi.Diag{}, err
	}
	return diagCounts(jobs), nil
}

// diagCounts sorts jobs into sdiag's counters by their state (jobstate): pending,
// running, and the ended ones into completed, canceled and failed (State.Failure:
// FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED). Started counts every job that
// ran, whatever its end, as slurmctld counts each start.
func diagCounts(jobs []slurmapi.Job) slurmapi.Diag {
	d := slurmapi.Diag{JobsSubmitted: int64(len(jobs))}
	for _, j := range jobs {
		s := jobstate.State(j.State[0])
		switch {
		case s == jobstate.Pending:
			d.JobsPending++
		case s == jobstate.Running:
			d.JobsRunning++
		case s == jobstate.Completed:
			d.JobsCompleted++
		case s == jobstate.Cancelled:
			d.JobsCanceled++
		case s.Failure():
			d.JobsFailed++
		}
		if !j.StartTime.IsZero() {
			d.JobsStarted++
		}
	}
	return d
}

// needsLedger answers what belongs to the accounting ledger.
func needsLedger(what string) error {
	return slurmapi.Errorf(http.StatusNotImplemented, slurmapi.ErrNotSupported, what,
		"%s comes from the accounting ledger, which this server is not connected to", what)
}

// Shares is sshare: fair-share standing lives in the accounting ledger.
func (b *Backend) Shares(ctx context.Context, accounts, users []string) ([]slurmapi.Share, error) {
	return nil, needsLedger("shares")
}

// healthComment is the node's health record as scontrol show node prints it in Comment:
// its last validation and its recent faults (the remediation history the controller keeps
// for escalation). A quarantined node whose validation failed also says what failed in
// its reason (sinfo -R).
func healthComment(n *corev1.Node, out *slurmapi.Node) string {
	var parts []string
	if v, ok, err := v1alpha1.ParseLastValidation(n.Annotations); ok && err == nil {
		parts = append(parts, "LastValidation="+v.Summary(time.Now()))
		if v.Result == v1alpha1.ValidationFailed && len(out.State) > 1 {
			out.Reason += ": validation " + v.Detail
		}
	}
	if h, err := v1alpha1.ParseFaultHistory(n.Annotations); err == nil && len(h) > 0 {
		last := h[len(h)-1]
		parts = append(parts, fmt.Sprintf("RecentFaults=%d (last %s %s, %s)", len(h),
			last.At.UTC().Format(time.RFC3339), last.Condition, last.Action))
	}
	return strings.Join(parts, " ")
}
