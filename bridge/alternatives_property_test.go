package bridge

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestAlternativesProperties runs the property loop on clusters of two partitions where new
// jobs list both, in either order, or one: every cycle keeps the invariants (a bound job
// inside one of its alternatives among them), is deterministic, and keeps non-preemptible
// work within quota in the partition it runs in.
func TestAlternativesProperties(t *testing.T) {
	specs := []genSpec{
		{nodes: 8, gpusPerNode: 8, depts: 2, teams: 2, jobs: 50, fractions: 0.2, gangs: 0.3, preemptible: 0.7, placement: 0.3},
		{nodes: 10, gpusPerNode: 4, depts: 2, teams: 3, jobs: 60, fractions: 0.3, gangs: 0.2, preemptible: 0.6, spread: true},
	}
	for seed := int64(1); seed <= 12; seed++ {
		for si, spec := range specs {
			t.Run(fmt.Sprintf("seed%d-spec%d", seed, si), func(t *testing.T) {
				r := rand.New(rand.NewSource(seed))
				s := splitPartitions(genRunning(r, genCluster(r, spec), spec, spec.jobs))
				next := spec.jobs
				sched := &Scheduler{}
				for cycle := range 6 {
					from := len(s.Jobs)
					genJobs(r, s, spec, next, spec.jobs/4)
					next += spec.jobs / 4
					giveAlternatives(r, s.Jobs[from:])
					d := sched.Schedule(s)
					checkInvariants(t, s, d)
					checkDeterministic(t, r, s, d)
					s = applyDecisions(s, d)
					recordRunPartition(s)
					checkNonPreemptibleWithinQuota(t, s)
					finishSome(r, s)
					if t.Failed() {
						t.Fatalf("cycle %d failed:\n%s", cycle, dump(d))
					}
				}
			})
		}
	}
}

// splitPartitions moves the odd nodes to partition gpu2 with the same quotas; a running
// job is in its first task's partition, and one running in both is dropped.
func splitPartitions(s *Snapshot) *Snapshot {
	s.Partitions = append(s.Partitions, Partition{Name: "gpu2", Placement: s.Partitions[0].Placement, Topology: s.Partitions[0].Topology})
	for i := range s.Nodes {
		if i%2 == 1 {
			s.Nodes[i].Partition = "gpu2"
		}
	}
	for i := range s.Queues {
		q := &s.Queues[i]
		for _, pq := range q.Quotas {
			pq.Partition = "gpu2"
			q.Quotas = append(q.Quotas, pq)
		}
	}
	recordRunPartition(s)
	part := partitionsByNode(s)
	s.Jobs = slices.DeleteFunc(s.Jobs, func(j Job) bool {
		return slices.ContainsFunc(j.Running, func(rt RunningTask) bool { return part[rt.Node] != j.Partition })
	})
	return s
}

func partitionsByNode(s *Snapshot) map[string]string {
	part := map[string]string{}
	for _, n := range s.Nodes {
		part[n.Name] = n.Partition
	}
	return part
}

// recordRunPartition sets a running job's partition to the one its nodes are in, as the
// adapter records where a job of several partitions started.
func recordRunPartition(s *Snapshot) {
	part := partitionsByNode(s)
	for i := range s.Jobs {
		if j := &s.Jobs[i]; len(j.Running) > 0 {
			j.Partition = part[j.Running[0].Node]
		}
	}
}

// giveAlternatives makes new jobs list both partitions, in either order, or gpu2 alone.
func giveAlternatives(r *rand.Rand, jobs []Job) {
	for i := range jobs {
		switch r.Intn(4) {
		case 0:
			jobs[i].Alternatives = []Alternative{{Partition: "gpu2"}, {Partition: "gpu"}}
		case 1:
			jobs[i].Alternatives = []Alternative{{Partition: "gpu"}, {Partition: "gpu2"}}
		case 2:
			jobs[i].Partition = "gpu2"
		}
	}
}
