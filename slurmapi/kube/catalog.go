package kube

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// PartitionFrom reads a Partition object as a Slurm partition.
func PartitionFrom(p *v1alpha1.Partition) slurmapi.Partition {
	out := slurmapi.Partition{
		Name: p.Name, GPUType: p.Spec.GPUModel, DefaultImage: p.Spec.DefaultImage,
		Default: p.Spec.Default, AllowAccounts: p.Spec.AllowedAccounts, AllowQOS: p.Spec.AllowedQOS,
		Priority: int(p.Spec.PriorityTier), NodeCount: int(p.Status.Nodes), State: "UP",
	}
	if p.Spec.DefaultTime != nil {
		out.DefaultTime = p.Spec.DefaultTime.Duration
	}
	if p.Spec.MaxTime != nil {
		out.MaxTime = p.Spec.MaxTime.Duration
	}
	if c := p.Status.Capacity; c.CPU != nil {
		out.CPUs = int(c.CPU.Value())
	}
	if c := p.Status.Capacity; c.GPU != nil {
		out.GPUs = int(c.GPU.Value())
	}
	if p.Status.Nodes > 0 && p.Status.SchedulableNodes == 0 {
		out.State = "DOWN"
	}
	return out
}

// QOSFrom reads a QOS object as a Slurm QOS.
func QOSFrom(q *v1alpha1.QOS) slurmapi.QOS {
	out := slurmapi.QOS{Name: q.Name, Priority: int64(q.Spec.Priority), Preemptible: q.Spec.Preemptible, UsageFactor: 1}
	switch {
	case !q.Spec.Preemptible:
		out.PreemptMode = "OFF" // nothing preempts its jobs: Slurm's "cluster" default, shown so
	case q.Spec.PreemptMode == v1alpha1.PreemptCancel:
		out.PreemptMode = "CANCEL"
	default:
		out.PreemptMode = "REQUEUE"
	}
	if f := q.Spec.UsageFactor; f != nil {
		out.UsageFactor = f.AsApproximateFloat64()
	}
	l := q.Spec.Limits
	if l.MaxWall != nil {
		out.MaxWall = l.MaxWall.Duration
	}
	if l.MaxJobsPerUser != nil {
		out.MaxJobsPerUser = int(*l.MaxJobsPerUser)
	}
	if l.MaxSubmitJobsPerUser != nil {
		out.MaxSubmitJobsPerUser = int(*l.MaxSubmitJobsPerUser)
	}
	out.MaxTRESPerUser = tresString(l.MaxTRESPerUser)
	out.GrpTRES = tresString(l.GrpTRES)
	return out
}

// tresString writes resource amounts as a Slurm TRES string.
func tresString(r *v1alpha1.ResourceAmounts) string {
	if r == nil {
		return ""
	}
	var parts []string
	if r.CPU != nil {
		parts = append(parts, "cpu="+r.CPU.String())
	}
	if r.Memory != nil {
		parts = append(parts, "mem="+r.Memory.String())
	}
	if r.GPU != nil {
		parts = append(parts, "gres/gpu="+r.GPU.String())
	}
	return strings.Join(parts, ",")
}

// CatalogFrom builds the submission catalogue from the site's objects.
// Jobs go to leaf Queues only, from the users they list (a Queue listing
// none takes no Slurm jobs); a user listed on exactly one Queue has it as
// default account; a Queue's QOS list and default come from it or its
// nearest ancestor that has them (the rules the Queue type documents).
func CatalogFrom(parts []v1alpha1.Partition, queues []v1alpha1.Queue, qos []v1alpha1.QOS) *slurmapi.Catalog {
	c := &slurmapi.Catalog{
		Partitions:     map[string]*slurmapi.Partition{},
		Accounts:       map[string]*slurmapi.Account{},
		QOS:            map[string]*slurmapi.QOS{},
		UserAccounts:   map[string][]string{},
		DefaultAccount: map[string]string{},
		AccountQOS:     map[string][]string{},
		DefaultQOS:     map[string]string{},
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Name < parts[j].Name })
	for i := range parts {
		p := PartitionFrom(&parts[i])
		c.Partitions[p.Name] = &p
		if p.Default && c.DefaultPartition == "" {
			c.DefaultPartition = p.Name
		}
	}
	parent := map[string]bool{}
	byName := make(map[string]*v1alpha1.Queue, len(queues))
	for i := range queues {
		parent[queues[i].Spec.ParentQueue] = true
		byName[queues[i].Name] = &queues[i]
	}
	for i := range queues {
		q := &queues[i]
		c.Accounts[q.Name] = &slurmapi.Account{Name: q.Name, Parent: q.Spec.ParentQueue, Description: q.Name, Organization: q.Spec.ParentQueue}
		if m := q.Spec.MaxSubmitJobs; m != nil {
			c.Accounts[q.Name].MaxSubmitJobs = int(*m)
		}
		if parent[q.Name] {
			continue // not a leaf: no jobs
		}
		if list, def := accountQOS(q, byName); list != nil || def != "" {
			c.AccountQOS[q.Name], c.DefaultQOS[q.Name] = list, def
		}
		for _, u := range q.Spec.Users {
			c.UserAccounts[u] = append(c.UserAccounts[u], q.Name)
		}
	}
	for u, accts := range c.UserAccounts {
		sort.Strings(accts)
		if len(accts) == 1 {
			c.DefaultAccount[u] = accts[0]
		}
	}
	for i := range qos {
		q := QOSFrom(&qos[i])
		c.QOS[q.Name] = &q
	}
	return c
}

// withNodes gives each partition of c its node count and node sizes
// (allocatable CPUs, memory, GPUs), which submissions are checked
// against. Every node the partition selects counts, drained or down
// ones too: they come back, as in Slurm.
func withNodes(c *slurmapi.Catalog, parts []v1alpha1.Partition, nodes []corev1.Node) {
	for i := range parts {
		p := c.Partitions[parts[i].Name]
		if p == nil {
			continue
		}
		sel := labels.SelectorFromSet(parts[i].Spec.NodeSelector)
		sizes := map[slurmapi.NodeSize]int{}
		p.NodeCount = 0
		for j := range nodes {
			n := &nodes[j]
			if !sel.Matches(labels.Set(n.Labels)) {
				continue
			}
			size := slurmapi.NodeSize{CPUs: n.Status.Allocatable.Cpu().Value(), MemoryMiB: n.Status.Allocatable.Memory().Value() >> 20, GPUs: v1alpha1.NodeGPUCount(n)}
			sizes[size]++
			p.NodeCount++
		}
		p.NodesKnown, p.NodeSizes = true, make([]slurmapi.NodeSize, 0, len(sizes))
		for s, n := range sizes {
			s.Count = n
			p.NodeSizes = append(p.NodeSizes, s)
		}
	}
}

// accountQOS is the QOS list of queue q's jobs and their default: the
// nearest list and the nearest default up the tree. A default outside the
// list gives way to the list's first entry. A nil list means no queue on
// the way up restricts QOS.
func accountQOS(q *v1alpha1.Queue, byName map[string]*v1alpha1.Queue) (list []string, def string) {
	seen := map[string]bool{}
	for at := q; at != nil && !seen[at.Name]; at = byName[at.Spec.ParentQueue] {
		seen[at.Name] = true // a parent loop (refused by the scheduler) ends the walk
		if list == nil && len(at.Spec.QOS) > 0 {
			list = at.Spec.QOS
		}
		if def == "" {
			def = at.Spec.DefaultQOS
		}
	}
	if list != nil && !slices.Contains(list, def) {
		def = list[0]
	}
	return list, def
}
