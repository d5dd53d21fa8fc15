package bridge

import (
	"math/rand"
	"testing"
)

// BenchmarkCycleAlternatives: BenchmarkCycle1000Nodes10kPending's cluster split into two
// partitions (odd nodes in gpu2, with the same quotas), its 10k pending jobs in gpu; in
// "alternatives" every other pending job lists gpu2 then gpu (sbatch -p gpu2,gpu), so the
// cost of jobs of two alternatives shows against the same cycle without them.
func BenchmarkCycleAlternatives(b *testing.B) {
	for _, alts := range []bool{false, true} {
		name := "plain"
		if alts {
			name = "alternatives"
		}
		b.Run(name, func(b *testing.B) { benchCycle(b, twoPartitionCluster(alts)) })
	}
}

func twoPartitionCluster(alts bool) *Snapshot {
	r := rand.New(rand.NewSource(2))
	spec := genSpec{nodes: 1000, gpusPerNode: 8, depts: 5, teams: 6, fractions: 0.3, gangs: 0.05, cpuOnly: 0.05, preemptible: 0.6}
	s := genRunning(r, genCluster(r, spec), spec, 6000)
	running := len(s.Jobs)
	genJobs(r, s, spec, 6000, 10000)
	s.Partitions = append(s.Partitions, Partition{Name: "gpu2", Placement: s.Partitions[0].Placement})
	odd := map[string]bool{}
	for i := range s.Nodes {
		if i%2 == 1 {
			s.Nodes[i].Partition = "gpu2"
			odd[s.Nodes[i].Name] = true
		}
	}
	for i := range s.Queues {
		q := &s.Queues[i]
		for _, pq := range q.Quotas {
			pq.Partition = "gpu2"
			q.Quotas = append(q.Quotas, pq)
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if len(j.Running) > 0 && odd[j.Running[0].Node] {
			j.Partition = "gpu2"
		}
		if alts && i >= running && i%2 == 0 {
			j.Alternatives = []Alternative{{Partition: "gpu2"}, {Partition: "gpu"}}
		}
	}
	return s
}
