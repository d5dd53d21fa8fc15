package scheduler

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// partitionEntry is a converted Partition with what the cache needs to place nodes in it.
type partitionEntry struct {
	p         bridge.Partition
	selector  map[string]string
	isDefault bool
	// draGPUs: its GPUs come through DRA (spec.gpuDeviceClass), so its Slurm jobs' pods
	// claim them rather than ask nvidia.com/gpu.
	draGPUs bool
}

func convertPartition(p *v1alpha1.Partition) partitionEntry {
	return partitionEntry{
		p: bridge.Partition{Name: p.Name, Placement: bridge.Strategy(p.Spec.Placement),
			AllowedQueues: p.Spec.AllowedAccounts, AllowedQOS: p.Spec.AllowedQOS, Topology: p.Spec.Topology},
		selector:  p.Spec.NodeSelector,
		isDefault: p.Spec.Default,
		draGPUs:   p.Spec.GPUDeviceClass != "",
	}
}

// convertQueue converts a Queue; quotas for "*" are kept under that name and expanded per
// partition by expandQuotas when the snapshot is built.
func convertQueue(q *v1alpha1.Queue) bridge.Queue {
	out := bridge.Queue{Name: q.Name, Parent: q.Spec.ParentQueue, Priority: q.Spec.Priority}
	for _, pq := range q.Spec.Quotas {
		out.Quotas = append(out.Quotas, bridge.PartitionQuota{
			Partition: pq.Partition,
			GPU:       resourceQuota(pq.GPU, (*resource.Quantity).MilliValue),
			CPU:       resourceQuota(pq.CPU, (*resource.Quantity).MilliValue),
			Memory:    resourceQuota(pq.Memory, (*resource.Quantity).Value),
		})
	}
	return out
}

// expandQuotas gives every partition without an entry of its own the "*" entry.
func expandQuotas(q bridge.Queue, partitions []string) bridge.Queue {
	var star *bridge.PartitionQuota
	have := map[string]bool{}
	for i := range q.Quotas {
		if q.Quotas[i].Partition == v1alpha1.AllPartitions {
			star = &q.Quotas[i]
		} else {
			have[q.Quotas[i].Partition] = true
		}
	}
	if star == nil {
		return q
	}
	out := q
	out.Quotas = make([]bridge.PartitionQuota, 0, len(partitions))
	for _, pq := range q.Quotas {
		if pq.Partition != v1alpha1.AllPartitions {
			out.Quotas = append(out.Quotas, pq)
		}
	}
	for _, p := range partitions {
		if !have[p] {
			e := *star
			e.Partition = p
			out.Quotas = append(out.Quotas, e)
		}
	}
	return out
}

func resourceQuota(rq *v1alpha1.ResourceQuota, unit func(*resource.Quantity) int64) bridge.ResourceQuota {
	if rq == nil {
		return bridge.ResourceQuota{}
	}
	out := bridge.ResourceQuota{OverQuotaWeight: 1}
	if rq.Quota != nil {
		out.Quota = unit(rq.Quota)
	}
	if rq.Limit != nil {
		out.Limit = unit(rq.Limit)
	}
	if rq.OverQuotaWeight != nil {
		out.OverQuotaWeight = float64(*rq.OverQuotaWeight)
	}
	return out
}

func convertQOS(q *v1alpha1.QOS) bridge.QOS {
	out := bridge.QOS{Name: q.Name, Priority: q.Spec.Priority, Preemptible: q.Spec.Preemptible}
	l := q.Spec.Limits
	if l.MaxTRESPerUser != nil && l.MaxTRESPerUser.GPU != nil {
		out.MaxGPUsPerUser = l.MaxTRESPerUser.GPU.MilliValue()
	}
	if l.MaxJobsPerUser != nil {
		out.MaxJobsPerUser = *l.MaxJobsPerUser
	}
	if l.GrpTRES != nil {
		out.GrpTRES = amounts(*l.GrpTRES)
	}
	if l.MaxWall != nil {
		out.MaxWall = l.MaxWall.Duration
	}
	return out
}

// amounts converts ResourceAmounts to the core's units.
func amounts(a v1alpha1.ResourceAmounts) bridge.Resources {
	var r bridge.Resources
	if a.GPU != nil {
		r.GPUMilli = a.GPU.MilliValue()
	}
	if a.CPU != nil {
		r.CPUMilli = a.CPU.MilliValue()
	}
	if a.Memory != nil {
		r.MemoryBytes = a.Memory.Value()
	}
	return r
}

// resourceAmounts converts the core's GPU, CPU and memory back for status.
func resourceAmounts(r bridge.Resources) v1alpha1.ResourceAmounts {
	return v1alpha1.ResourceAmounts{
		GPU:    resource.NewMilliQuantity(r.GPUMilli, resource.DecimalSI),
		CPU:    resource.NewMilliQuantity(r.CPUMilli, resource.DecimalSI),
		Memory: resource.NewQuantity(r.MemoryBytes, resource.BinarySI),
	}
}
