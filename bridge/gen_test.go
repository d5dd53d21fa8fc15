package bridge

import (
	"fmt"
	"math/rand"
	"time"
)

// genSpec sizes a random cluster for property tests and benchmarks.
type genSpec struct {
	nodes, gpusPerNode int
	depts, teams       int // teams per department
	jobs               int // jobs to generate
	fractions          float64
	gangs              float64
	cpuOnly            float64
	preemptible        float64
	spread             bool
	// placement is the share of jobs with placement rules: a node set, a required or
	// preferred rack, one task per node or exclusive nodes. With it, nodes sit in racks
	// of three.
	placement float64
}

var genEpoch = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// genCluster makes the nodes, queues and QOS of a random cluster with one partition.
func genCluster(r *rand.Rand, g genSpec) *Snapshot {
	strategy := Binpack
	if g.spread {
		strategy = Spread
	}
	s := &Snapshot{Now: genEpoch, Config: Config{UsageFactor: 0.5, AgingInterval: time.Hour},
		Partitions: []Partition{{Name: "gpu", Placement: strategy}}}
	s.Nodes = make([]Node, g.nodes)
	for i := range s.Nodes {
		n := Node{Name: fmt.Sprintf("node-%05d", i), Partition: "gpu",
			Allocatable: Resources{CPUMilli: 128000, MemoryBytes: 1 << 40}}
		for k := range g.gpusPerNode {
			n.GPUs = append(n.GPUs, GPU{Index: int32(k), UUID: fmt.Sprintf("GPU-%d-%d", i, k), MemoryMiB: 81920,
				Unhealthy: r.Intn(200) == 0})
		}
		if g.placement > 0 {
			n.Labels = map[string]string{"rack": fmt.Sprintf("rack-%d", i/3)}
		}
		s.Nodes[i] = n
	}
	if g.placement > 0 {
		s.Partitions[0].Topology = []string{"rack"}
		var even, firstHalf []string
		for i, n := range s.Nodes {
			if i%2 == 0 {
				even = append(even, n.Name)
			}
			if i < len(s.Nodes)/2 {
				firstHalf = append(firstHalf, n.Name)
			}
		}
		s.NodeSets = []NodeSet{{Name: "even", Nodes: even}, {Name: "first-half", Nodes: firstHalf}, {Name: "none"}}
	}
	capacity := int64(g.nodes * g.gpusPerNode * 1000)
	for d := range g.depts {
		dept := fmt.Sprintf("dept-%d", d)
		dq := capacity / int64(g.depts) * int64(50+r.Intn(50)) / 100
		s.Queues = append(s.Queues, Queue{Name: dept, Quotas: []PartitionQuota{{Partition: "gpu",
			GPU: ResourceQuota{Quota: dq, OverQuotaWeight: float64(1 + r.Intn(3))}}}})
		for t := range g.teams {
			tq := dq / int64(g.teams) * int64(r.Intn(120)) / 100
			q := Queue{Name: fmt.Sprintf("%s-team-%d", dept, t), Parent: dept, Quotas: []PartitionQuota{{Partition: "gpu",
				GPU: ResourceQuota{Quota: tq, OverQuotaWeight: float64(1 + r.Intn(3))}}}}
			if r.Intn(4) == 0 {
				q.Quotas[0].GPU.Limit = tq + int64(r.Intn(4))*8000
			}
			if r.Intn(5) == 0 {
				q.Priority = 1
			}
			s.Queues = append(s.Queues, q)
		}
		s.Usage = append(s.Usage, QueueUsage{Queue: dept, Partition: "gpu", Usage: Resources{GPUMilli: r.Int63n(1000000)}})
	}
	s.QOS = []QOS{{Name: "normal"}, {Name: "preemptible", Preemptible: true},
		{Name: "high", Priority: 100, MaxGPUsPerUser: 64000}, {Name: "capped", MaxJobsPerUser: 20, MaxGPUsPerUser: 32000}}
	return s
}

// genJobs adds n pending jobs with ids from next on.
func genJobs(r *rand.Rand, s *Snapshot, g genSpec, next, n int) {
	for i := range n {
		team := fmt.Sprintf("dept-%d-team-%d", r.Intn(g.depts), r.Intn(g.teams))
		j := Job{ID: fmt.Sprintf("job-%07d", next+i), Queue: team, Partition: "gpu", User: fmt.Sprintf("user-%d", r.Intn(40)),
			Priority: int32(r.Intn(3)), SubmitTime: s.Now.Add(-time.Duration(r.Intn(600)) * time.Minute)}
		switch x := r.Intn(10); {
		case x < 6 && r.Float64() < g.preemptible:
			j.QOS = "preemptible"
		case x < 7:
			j.QOS = "high"
		case x < 8:
			j.QOS = "capped"
		default:
			j.QOS = "normal"
		}
		if r.Intn(3) == 0 {
			j.TimeLimit = time.Duration(1+r.Intn(8)) * time.Hour
		}
		// Requests come from a few templates, as real workloads' do.
		tg := TaskGroup{Name: "main", Count: 1, Request: Resources{CPUMilli: int64(500 << r.Intn(4)), MemoryBytes: int64(4<<r.Intn(4)) << 30}}
		switch f := r.Float64(); {
		case f < g.cpuOnly:
		case f < g.cpuOnly+g.fractions:
			switch r.Intn(4) {
			case 0:
				tg.GPU = GPURequest{Kind: GPUMemory, MemoryMiB: int64(5000 + r.Intn(35000))}
			case 1:
				tg.GPU = GPURequest{Kind: GPUMultiFraction, Devices: 2, Milli: 500}
			default:
				tg.GPU = GPURequest{Kind: GPUFraction, Milli: int32(250 * (1 + r.Intn(2)))}
			}
		case f < g.cpuOnly+g.fractions+g.gangs:
			tg.Count = int32(2 + r.Intn(3))
			tg.GPU = GPURequest{Kind: GPUWhole, Devices: int32(g.gpusPerNode / (1 + r.Intn(2)))}
			if r.Intn(2) == 0 {
				j.MinMember = tg.Count - 1
			}
		default:
			tg.GPU = GPURequest{Kind: GPUWhole, Devices: int32([]int{1, 1, 1, 2, 4}[r.Intn(5)])}
		}
		if g.placement > 0 && r.Float64() < g.placement {
			switch r.Intn(7) {
			case 0:
				tg.NodeSet = []string{"even", "first-half", "none"}[r.Intn(3)]
				if len(s.Jobs)%2 == 0 { // every other one as alternatives (--constraint [a|b]), without a draw
					j.Alternatives = []Alternative{{NodeSet: "none"}, {NodeSet: tg.NodeSet}, {NodeSet: "first-half"}}
				}
			case 1:
				j.Placement.RequiredLevel = "rack"
			case 2:
				j.Placement.PreferredLevel = "rack"
			case 3:
				j.Placement.OnePerNode = true
			case 4:
				j.Placement.Exclusive = true
			case 5:
				j.Placement.Spread = []SpreadRule{{Level: "rack", MaxSkew: int32(1 + r.Intn(2))}}
			default:
				j.Placement = Placement{RequiredLevel: "rack", OnePerNode: true}
				tg.NodeSet = "even"
			}
		}
		j.Groups = []TaskGroup{tg}
		s.Jobs = append(s.Jobs, j)
	}
}

// genRunning makes a cluster busy: it schedules n jobs and applies the decisions, so that the
// running state is one the core itself produced.
func genRunning(r *rand.Rand, s *Snapshot, g genSpec, n int) *Snapshot {
	genJobs(r, s, g, 0, n)
	next := applyDecisions(s, Schedule(s))
	next.Now = s.Now
	// Keep only what runs: pending leftovers are dropped, so the caller adds its own.
	running := next.Jobs[:0]
	for _, j := range next.Jobs {
		if len(j.Running) > 0 {
			running = append(running, j)
		}
	}
	next.Jobs = running
	return next
}
