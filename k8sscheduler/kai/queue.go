package kai

import (
	"fmt"
	"math"
	"regexp"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// queueName is the form of a Sluice queue name (a DNS label), which PodGroups and the
// parentQueue field require.
var queueName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// SluiceQueue is the Sluice Queue a KAI Queue becomes: the same name and parent, its
// quotas for every partition ("*": KAI's quotas are cluster-wide), its priority (KAI's
// default 100 when unset, so siblings keep their order) and minimum runtimes, open to
// every namespace as a KAI Queue is. Warnings name what Sluice cannot express exactly
// (docs/kai-compatibility.md); an error is a Queue that cannot become a Sluice Queue.
func SluiceQueue(q *Queue) (out *v1alpha1.Queue, warnings []string, err error) {
	if len(q.Name) > 63 || !queueName.MatchString(q.Name) {
		return nil, nil, fmt.Errorf("KAI Queue %q: a Sluice queue name is a DNS label (lower-case letters, digits and '-', at most 63)", q.Name)
	}
	if p := q.Spec.ParentQueue; p != "" && (len(p) > 63 || !queueName.MatchString(p)) {
		return nil, nil, fmt.Errorf("KAI Queue %q: parentQueue %q is not a DNS label", q.Name, p)
	}
	prio := int64(DefaultQueuePriority)
	if q.Spec.Priority != nil {
		prio = *q.Spec.Priority
	}
	if prio < 0 || prio > math.MaxInt32 {
		return nil, nil, fmt.Errorf("KAI Queue %q: priority %d is outside 0..%d", q.Name, prio, math.MaxInt32)
	}
	quota := v1alpha1.PartitionQuota{Partition: v1alpha1.AllPartitions}
	if r := q.Spec.Resources; r != nil {
		for _, res := range []struct {
			name string
			in   *QueueResource
			out  **v1alpha1.ResourceQuota
			unit func(float64) resource.Quantity
		}{
			{"gpu", r.GPU, &quota.GPU, gpus},
			{"cpu", r.CPU, &quota.CPU, millicores},
			{"memory", r.Memory, &quota.Memory, megabytes},
		} {
			rq, warn, err := resourceQuota(res.in, res.unit)
			if err != nil {
				return nil, nil, fmt.Errorf("KAI Queue %q: resources.%s: %w", q.Name, res.name, err)
			}
			if warn != "" && res.name == "gpu" {
				warn += "; its non-preemptible GPU work needs a stated GPU quota"
			}
			if warn != "" {
				warnings = append(warnings, fmt.Sprintf("KAI Queue %q: resources.%s: %s", q.Name, res.name, warn))
			}
			*res.out = rq
		}
	}
	out = &v1alpha1.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Queue"},
		ObjectMeta: metav1.ObjectMeta{Name: q.Name, Labels: map[string]string{MirrorLabel: "true"}},
		Spec: v1alpha1.QueueSpec{
			ParentQueue:       q.Spec.ParentQueue,
			Priority:          int32(prio),
			NamespaceSelector: &metav1.LabelSelector{},
			PreemptMinRuntime: q.Spec.PreemptMinRuntime,
			ReclaimMinRuntime: q.Spec.ReclaimMinRuntime,
		},
	}
	if quota.GPU != nil || quota.CPU != nil || quota.Memory != nil {
		out.Spec.Quotas = []v1alpha1.PartitionQuota{quota}
	}
	return out, warnings, nil
}

// resourceQuota translates one KAI resource bound. KAI's -1 is "unlimited"; a quota of 0
// or unset deserves nothing. A limit of 0 or unset allows nothing beyond the quota in KAI:
// Sluice caps the queue at its quota then, and where the quota is 0 too (KAI: the
// resource may not be used at all) it cannot say so and warns.
func resourceQuota(r *QueueResource, unit func(float64) resource.Quantity) (*v1alpha1.ResourceQuota, string, error) {
	if r == nil {
		return nil, "", nil
	}
	var out v1alpha1.ResourceQuota
	var warn string
	quota := 0.0
	if r.Quota != nil {
		quota = *r.Quota
		if err := checkBound("quota", quota); err != nil {
			return nil, "", err
		}
		if quota > 0 {
			out.Quota = new(unit(quota))
		} else if quota == Unlimited {
			warn = "quota -1 (unlimited) has no Sluice equivalent: the queue deserves none of it and shares what is idle by its weight"
		}
	}
	switch {
	case r.Limit != nil && *r.Limit == Unlimited:
	case r.Limit != nil && *r.Limit > 0:
		if err := checkBound("limit", *r.Limit); err != nil {
			return nil, "", err
		}
		out.Limit = new(unit(*r.Limit))
	case r.Limit != nil && *r.Limit < 0:
		return nil, "", checkBound("limit", *r.Limit)
	case quota > 0: // limit 0 or unset: nothing beyond the quota
		out.Limit = new(unit(quota))
	default:
		warn = "no limit and no quota forbid the resource in KAI; Sluice cannot forbid it and leaves it unbounded"
	}
	if out.Quota == nil && out.Limit == nil && r.OverQuotaWeight == nil {
		return nil, warn, nil
	}
	// Written out even when KAI leaves it unset (Sluice's default, 1, which the API server
	// would fill in): what is written then reads back the same.
	out.OverQuotaWeight = new(int32(1))
	if w := r.OverQuotaWeight; w != nil {
		if *w < 0 || *w > math.MaxInt32 || math.IsNaN(*w) {
			return nil, "", fmt.Errorf("overQuotaWeight %v is outside 0..%d", *w, math.MaxInt32)
		}
		out.OverQuotaWeight = new(int32(math.Round(*w)))
	}
	return &out, warn, nil
}

// checkBound refuses what is neither -1 nor a finite non-negative number.
func checkBound(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || (v < 0 && v != Unlimited) {
		return fmt.Errorf("%s %v: want -1 (unlimited) or a number of 0 or more", field, v)
	}
	return nil
}

// gpus are KAI's GPU units (devices, fractions allowed), in thousandths as Sluice counts.
func gpus(v float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(v*1000)), resource.DecimalSI)
}

// millicores are KAI's CPU units.
func millicores(v float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(v)), resource.DecimalSI)
}

// megabytes are KAI's memory units: 10^6 bytes.
func megabytes(v float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Round(v*1e6)), resource.DecimalSI)
}
