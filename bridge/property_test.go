package bridge

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// Property tests run the core on random clusters for many cycles, applying its decisions
// (evicted tasks are requeued, as the adapter does), letting some jobs finish and adding new
// ones, and check after every cycle what must always hold.
func TestProperties(t *testing.T) {
	specs := []genSpec{
		{nodes: 6, gpusPerNode: 8, depts: 2, teams: 2, jobs: 40, fractions: 0.3, gangs: 0.2, cpuOnly: 0.05, preemptible: 0.7},
		{nodes: 10, gpusPerNode: 4, depts: 3, teams: 2, jobs: 60, fractions: 0.5, gangs: 0.1, preemptible: 0.5, spread: true},
		{nodes: 4, gpusPerNode: 8, depts: 1, teams: 4, jobs: 50, fractions: 0.1, gangs: 0.4, preemptible: 0.9},
		{nodes: 9, gpusPerNode: 8, depts: 2, teams: 2, jobs: 50, fractions: 0.2, gangs: 0.4, preemptible: 0.7, placement: 0.5},
		{nodes: 12, gpusPerNode: 4, depts: 2, teams: 3, jobs: 60, fractions: 0.3, gangs: 0.3, preemptible: 0.6, spread: true, placement: 0.4},
	}
	for seed := int64(1); seed <= 20; seed++ {
		for si, spec := range specs {
			t.Run(fmt.Sprintf("seed%d-spec%d", seed, si), func(t *testing.T) {
				r := rand.New(rand.NewSource(seed))
				s := genRunning(r, genCluster(r, spec), spec, spec.jobs)
				checkNonPreemptibleWithinQuota(t, s)
				next := spec.jobs
				sched := &Scheduler{} // reused across cycles, as the adapter does
				taken := 0            // running tasks it carried over instead of resolving them
				for cycle := range 6 {
					genJobs(r, s, spec, next, spec.jobs/4)
					next += spec.jobs / 4
					d := sched.Schedule(s)
					taken += sched.buf.carry.taken
					checkInvariants(t, s, d)
					checkDeterministic(t, r, s, d)
					s = applyDecisions(s, d)
					checkNonPreemptibleWithinQuota(t, s)
					finishSome(r, s)
					if t.Failed() {
						t.Fatalf("cycle %d failed:\n%s", cycle, dump(d))
					}
				}
				if taken == 0 {
					t.Error("no running task was carried over between cycles; the fresh Scheduler comparison did not cover them")
				}
			})
		}
	}
}

// checkDeterministic runs the same snapshot again with a fresh Scheduler, and once more with
// its nodes, queues and jobs listed in another order: the decisions must be identical.
func checkDeterministic(t *testing.T, r *rand.Rand, s *Snapshot, d *Decisions) {
	t.Helper()
	if again := Schedule(s); !reflect.DeepEqual(again, d) {
		t.Errorf("same snapshot, different decisions")
	}
	shuffled := *s
	shuffled.Nodes, shuffled.Jobs, shuffled.Queues = slices.Clone(s.Nodes), slices.Clone(s.Jobs), slices.Clone(s.Queues)
	r.Shuffle(len(shuffled.Nodes), func(i, j int) { shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i] })
	r.Shuffle(len(shuffled.Jobs), func(i, j int) { shuffled.Jobs[i], shuffled.Jobs[j] = shuffled.Jobs[j], shuffled.Jobs[i] })
	r.Shuffle(len(shuffled.Queues), func(i, j int) { shuffled.Queues[i], shuffled.Queues[j] = shuffled.Queues[j], shuffled.Queues[i] })
	if other := Schedule(&shuffled); !reflect.DeepEqual(other, d) {
		t.Errorf("same snapshot listed in another order, different decisions:\n%s\nvs\n%s", dump(d), dump(other))
	}
}

// checkNonPreemptibleWithinQuota: non-preemptible GPU work of every leaf queue stays within
// its deserved quota.
func checkNonPreemptibleWithinQuota(t *testing.T, s *Snapshot) {
	t.Helper()
	quota := map[string]int64{}
	for _, q := range s.Queues {
		for _, pq := range q.Quotas {
			quota[q.Name+"/"+pq.Partition] = pq.GPU.Quota
		}
	}
	preemptibleQOS := map[string]bool{}
	for _, q := range s.QOS {
		preemptibleQOS[q.Name] = q.Preemptible
	}
	used := map[string]int64{}
	for _, j := range s.Jobs {
		if j.Preemptible || preemptibleQOS[j.QOS] {
			continue
		}
		for _, rt := range j.Running {
			g := j.Groups[0]
			switch g.GPU.Kind {
			case GPUWhole:
				used[j.Queue+"/"+j.Partition] += 1000 * int64(len(rt.GPUs))
			case GPUFraction, GPUMultiFraction, GPUMemory:
				used[j.Queue+"/"+j.Partition] += int64(rt.GPUMilli) * int64(len(rt.GPUs))
			}
		}
	}
	for k, u := range used {
		if u > quota[k] {
			t.Errorf("queue %s runs %d milli-GPUs of non-preemptible work, above its quota %d", k, u, quota[k])
		}
	}
}

// finishSome ends about a tenth of the running jobs.
func finishSome(r *rand.Rand, s *Snapshot) {
	for i := range s.Jobs {
		if len(s.Jobs[i].Running) > 0 && r.Intn(10) == 0 {
			s.Jobs[i].Running = nil
			s.Jobs[i].Groups = slices.Clone(s.Jobs[i].Groups)
			s.Jobs[i].Groups[0].Count = 0 // finished: nothing left to run
		}
	}
	s.Jobs = slices.DeleteFunc(s.Jobs, func(j Job) bool { return j.Groups[0].Count == 0 })
}

// TestNoReclaimCycle: with demand fixed, once queue A reclaims from queue B, B never reclaims
// from A in a later cycle (evicted jobs are requeued and keep asking).
func TestNoReclaimCycle(t *testing.T) {
	spec := genSpec{nodes: 4, gpusPerNode: 8, depts: 2, teams: 3, jobs: 80, fractions: 0.2, gangs: 0.1, preemptible: 0.9}
	reclaims := 0
	for seed := int64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := genRunning(r, genCluster(r, spec), spec, spec.jobs)
		s.Config.UsageFactor = 0 // fixed usage: fair shares may not drift between cycles
		genJobs(r, s, spec, spec.jobs, spec.jobs)
		queueOf := map[string]string{}
		for _, j := range s.Jobs {
			queueOf[j.ID] = j.Queue
		}
		took := map[[2]string]int{} // {from, by} -> first cycle
		for cycle := range 8 {
			d := Schedule(s)
			for _, e := range d.Evictions {
				if e.Kind != EvictReclaim {
					continue
				}
				reclaims++
				from, by := queueOf[e.Job], queueOf[e.ForJob]
				if first, ok := took[[2]string{by, from}]; ok {
					t.Fatalf("seed %d cycle %d: queue %s reclaims from %s, which reclaimed from it in cycle %d", seed, cycle, by, from, first)
				}
				if _, ok := took[[2]string{from, by}]; !ok {
					took[[2]string{from, by}] = cycle
				}
			}
			s = applyDecisions(s, d)
		}
	}
	if reclaims == 0 {
		t.Fatal("no reclaim happened in any seed; the property was not exercised")
	}
	t.Logf("%d reclaim evictions checked", reclaims)
}
