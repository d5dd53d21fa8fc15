package bridge

import (
	"math"
	"slices"
)

// divideFairShare computes every queue's fair share in every partition, top-down: the
// partition's capacity goes to the top-level queues, each queue's share to its children.
func (c *cycle) divideFairShare() {
	for p := range c.parts {
		p := int32(p)
		for _, r := range c.roots {
			c.requestOf(r, p)
		}
		c.divide(p, c.parts[p].capacity, c.roots)
		for q := range c.queues {
			qp := c.qpart(int32(q), p)
			qp.ratio = shareRatio(qp)
		}
	}
}

// requestOf sets what a queue asks for in a partition: its allocation plus pending demand for
// a leaf, the sum of its children otherwise; capped by its limit.
func (c *cycle) requestOf(q, p int32) vec {
	qp := c.qpart(q, p)
	if kids := c.queues[q].children; len(kids) > 0 {
		qp.request = vec{}
		for _, k := range kids {
			qp.request.add(c.requestOf(k, p))
		}
	} else {
		qp.request.add(qp.alloc)
	}
	for d := range qp.request {
		if qp.limit[d] > 0 {
			qp.request[d] = min(qp.request[d], qp.limit[d])
		}
	}
	return qp.request
}

// shareKid is one child in the division of one resource.
type shareKid struct {
	quota, want, got int64
	weight, usage    float64
	priority         int32
}

func (c *cycle) divide(p int32, share vec, kids []int32) {
	if len(kids) == 0 {
		return
	}
	ks := make([]shareKid, len(kids))
	for d := range numDims {
		for i, k := range kids {
			qp := c.qpart(k, p)
			ks[i] = shareKid{quota: qp.quota[d], want: qp.request[d], weight: qp.weight[d],
				usage: float64(qp.usage[d]), priority: c.queues[k].priority}
		}
		divideDim(share[d], ks, c.s.Config.UsageFactor)
		for i, k := range kids {
			c.qpart(k, p).fair[d] = ks[i].got
		}
	}
	for _, k := range kids {
		c.divide(p, c.qpart(k, p).fair, c.queues[k].children)
	}
}

// divideDim splits total among kids: first each gets its deserved quota (capped by what it
// wants; scaled down together when quotas exceed the total), then what remains goes over
// quota in strict priority bands, by weight corrected for recent usage, until nothing that
// anyone wants is left.
func divideDim(total int64, ks []shareKid, usageFactor float64) {
	var deserved int64
	for i := range ks {
		ks[i].got = min(ks[i].quota, ks[i].want)
		deserved += ks[i].got
	}
	if deserved > total {
		for i := range ks {
			ks[i].got = int64(float64(ks[i].got) * float64(total) / float64(deserved))
		}
		return
	}
	left := total - deserved
	order := make([]int, len(ks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(ks[b].priority) - int(ks[a].priority) })
	for start := 0; start < len(order) && left > 0; {
		end := start
		for end < len(order) && ks[order[end]].priority == ks[order[start]].priority {
			end++
		}
		band := order[start:end]
		left = waterFill(ks, band, left, usageFactor)
		if usageFactor > 0 {
			left = waterFill(ks, band, left, 0)
		}
		start = end
	}
}

// waterFill hands left out over quota to the band by effective weight, capping each kid at
// what it wants and passing its surplus to the others; it returns what nobody took.
func waterFill(ks []shareKid, band []int, left int64, usageFactor float64) int64 {
	var w, u float64
	for _, i := range band {
		w += ks[i].weight
		u += ks[i].usage
	}
	if w <= 0 {
		return left
	}
	eff := make([]float64, len(band))
	for j, i := range band {
		eff[j] = ks[i].weight / w
		if usageFactor > 0 && u > 0 {
			// KAI's k term: a queue that used more than its weight recently gets less.
			eff[j] = math.Max(0, eff[j]+usageFactor*(eff[j]-ks[i].usage/u))
		}
	}
	for left > 0 {
		var sum float64
		for j, i := range band {
			if ks[i].want > ks[i].got && eff[j] > 0 {
				sum += eff[j]
			}
		}
		if sum == 0 {
			return left
		}
		var given int64
		for j, i := range band {
			room := ks[i].want - ks[i].got
			if room <= 0 || eff[j] <= 0 {
				continue
			}
			give := min(int64(float64(left)*eff[j]/sum), room)
			ks[i].got += give
			given += give
		}
		if given == 0 {
			// Rounding left less than one unit per kid: hand the rest out one by one.
			for j, i := range band {
				if given < left && ks[i].want > ks[i].got && eff[j] > 0 {
					ks[i].got++
					given++
				}
			}
		}
		left -= given
	}
	return left
}

// shareRatio is a queue's dominant allocation relative to its fair share: below 1 it is
// under its share. GPUs decide for a queue that asks for or holds any; CPU and memory
// otherwise. A queue whose fair share is nothing is always over it: it runs only on what
// everyone else leaves.
func shareRatio(qp *queuePart) float64 {
	dims := shareDims[1:]
	if qp.request[DimGPU] > 0 || qp.alloc[DimGPU] > 0 {
		dims = shareDims[:1]
	}
	r := 0.0
	for _, d := range dims {
		if qp.fair[d] <= 0 {
			return math.Inf(1)
		}
		r = math.Max(r, float64(qp.alloc[d])/float64(qp.fair[d]))
	}
	return r
}
