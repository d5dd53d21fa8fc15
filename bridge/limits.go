package bridge

import "fmt"

// limitKey names one limit that stops jobs: its code, the queue or QOS, the dimension or
// partition, and the user; reasons are formatted once per limit and cycle, not once per job.
type limitKey struct {
	code   string
	obj, d int32
	user   string
}

// limitReason returns the reason for a limit, formatting it the first time.
func (c *cycle) limitReason(k limitKey, format func() string) (string, string) {
	r, ok := c.reasons[k]
	if !ok {
		if c.reasons == nil {
			c.reasons = map[limitKey]string{}
		}
		r = format()
		c.reasons[k] = r
	}
	return k.code, r
}

// admit checks the limits a job must respect to start now, with what it would add: QOS
// per-user and group limits, the queue limits of its whole path, and for non-preemptible
// work the deserved quota. It returns a pending code and reason, or "" when admitted.
func (c *cycle) admit(js *jobState) (string, string) {
	if code, reason := c.resvAdmit(js); code != "" {
		return code, reason
	}
	need := js.need
	if js.qos >= 0 {
		qs := &c.qos[js.qos]
		q := qs.q
		uu := &userUsage{}
		if qs.perUser() {
			uu = c.user(js)
		}
		user := js.job.User
		if q.MaxJobsPerUser > 0 && js.running == 0 && uu.jobs+1 > q.MaxJobsPerUser {
			return c.limitReason(limitKey{ReasonQOSJobsPerUser, js.qos, 0, user}, func() string {
				return fmt.Sprintf("user %s runs the %d jobs QOS %s allows per user", user, q.MaxJobsPerUser, q.Name)
			})
		}
		if q.MaxGPUsPerUser > 0 && need[DimGPU] > 0 && uu.gpu+need[DimGPU] > q.MaxGPUsPerUser {
			return c.limitReason(limitKey{ReasonQOSGPUsPerUser, js.qos, 0, user}, func() string {
				return fmt.Sprintf("user %s would go above the %s QOS %s allows per user", user, amount(DimGPU, q.MaxGPUsPerUser), q.Name)
			})
		}
		grp := q.GrpTRES.vec()
		for d := range grp {
			if grp[d] > 0 && need[d] > 0 && qs.use[d]+need[d] > grp[d] {
				return c.limitReason(limitKey{ReasonQOSGroupTRES, js.qos, int32(d), ""}, func() string {
					return fmt.Sprintf("QOS %s is at its group limit of %s", q.Name, amount(Dim(d), grp[d]))
				})
			}
		}
	}
	pname := c.parts[js.part].name
	for q := js.queue; q >= 0; q = c.queues[q].parent {
		qp := c.qpart(q, js.part)
		for d := range need {
			if qp.limit[d] > 0 && need[d] > 0 && qp.alloc[d]+need[d] > qp.limit[d] {
				return c.limitReason(limitKey{ReasonQueueLimit, q, int32(d)*int32(len(c.parts)) + js.part, ""}, func() string {
					return fmt.Sprintf("queue %s at its limit of %s in partition %s", c.queues[q].name, amount(Dim(d), qp.limit[d]), pname)
				})
			}
		}
		if js.preempt {
			continue
		}
		for d := range need {
			// A leaf's GPU quota always bounds non-preemptible GPU work (no quota: none may
			// run); other resources and parents only where a quota is set.
			governed := qp.quota[d] > 0 || (Dim(d) == DimGPU && q == js.queue)
			if governed && need[d] > 0 && qp.nonPreempt[d]+need[d] > qp.quota[d] {
				return c.limitReason(limitKey{ReasonQueueQuota, q, int32(d)*int32(len(c.parts)) + js.part, ""}, func() string {
					return fmt.Sprintf("non-preemptible work of queue %s would go above its deserved %s in partition %s; preemptible jobs may use idle capacity",
						c.queues[q].name, amount(Dim(d), qp.quota[d]), pname)
				})
			}
		}
	}
	return "", ""
}

// amount formats a quantity of one dimension for people.
func amount(d Dim, v int64) string {
	switch d {
	case DimGPU:
		if v%1000 == 0 {
			if v == 1000 {
				return "1 GPU"
			}
			return fmt.Sprintf("%d GPUs", v/1000)
		}
		return fmt.Sprintf("%.3g GPUs", float64(v)/1000)
	case DimGPUMemory:
		return fmt.Sprintf("%d MiB of GPU memory", v)
	case DimCPU:
		return fmt.Sprintf("%.4g CPUs", float64(v)/1000)
	}
	return fmt.Sprintf("%.4g GiB of memory", float64(v)/(1<<30))
}

// describeTask says what one task of g asks for.
func describeTask(g *groupReq) string {
	switch g.gpu.Kind {
	case GPUWhole:
		return amount(DimGPU, 1000*int64(g.gpu.Devices))
	case GPUFraction:
		return fmt.Sprintf("%.3g of a GPU", float64(g.gpu.Milli)/1000)
	case GPUMemory:
		return amount(DimGPUMemory, g.gpu.MemoryMiB) + " on one GPU"
	case GPUMultiFraction:
		return fmt.Sprintf("%.3g of each of %d GPUs on one node", float64(g.gpu.Milli)/1000, g.gpu.Devices)
	}
	return amount(DimCPU, g.base[DimCPU]) + " and " + amount(DimMemory, g.base[DimMemory])
}
