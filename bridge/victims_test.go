package bridge

import (
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestListedByID(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want bool
	}{
		{nil, true},
		{[]string{"a"}, true},
		{[]string{"a", "b", "c"}, true},
		{[]string{"a", "a", "b"}, true}, // an id given twice: position breaks the tie both ways
		{[]string{"b", "a"}, false},
		{[]string{"job-10", "job-9"}, true}, // ids compare as strings, not numbers
		{[]string{"job-9", "job-10"}, false},
	} {
		jobs := make([]Job, len(tc.ids))
		for i, id := range tc.ids {
			jobs[i].ID = id
		}
		if got := listedByID(jobs); got != tc.want {
			t.Errorf("listedByID(%v) = %v, want %v", tc.ids, got, tc.want)
		}
	}
}

// TestOrderByPositionMatchesOrderByID: a snapshot listing its jobs by id takes the fast path
// (a job's position stands for its id in eviction, queue and pending order); the same
// snapshot shuffled compares the ids themselves. Both must decide exactly the same, on
// random busy clusters where reclaim and preemption evict.
func TestOrderByPositionMatchesOrderByID(t *testing.T) {
	specs := []genSpec{
		{nodes: 8, gpusPerNode: 8, depts: 2, teams: 3, jobs: 120, fractions: 0.4, gangs: 0.1, cpuOnly: 0.2, preemptible: 0.9},
		{nodes: 12, gpusPerNode: 4, depts: 3, teams: 2, jobs: 100, fractions: 0.3, gangs: 0.2, preemptible: 0.7, spread: true},
	}
	evictions := 0
	for seed := int64(1); seed <= 15; seed++ {
		for si, spec := range specs {
			r := rand.New(rand.NewSource(seed))
			s := genRunning(r, genCluster(r, spec), spec, spec.jobs)
			for cycle := range 3 {
				genJobs(r, s, spec, spec.jobs*(cycle+1), spec.jobs)
				if !listedByID(s.Jobs) {
					t.Fatalf("seed %d spec %d: generated jobs are not listed by id; the fast path is not exercised", seed, si)
				}
				fast := (&Scheduler{}).Schedule(s)
				shuffled := *s
				shuffled.Jobs = slices.Clone(s.Jobs)
				r.Shuffle(len(shuffled.Jobs), func(i, j int) { shuffled.Jobs[i], shuffled.Jobs[j] = shuffled.Jobs[j], shuffled.Jobs[i] })
				if listedByID(shuffled.Jobs) {
					continue // a shuffle that left them in order tests nothing
				}
				slow := (&Scheduler{}).Schedule(&shuffled)
				if !reflect.DeepEqual(fast, slow) {
					t.Fatalf("seed %d spec %d cycle %d: ordering by position and by id differ:\n%s\nvs\n%s", seed, si, cycle, dump(fast), dump(slow))
				}
				evictions += len(fast.Evictions)
				s = applyDecisions(s, fast)
				slices.SortFunc(s.Jobs, func(a, b Job) int { return strings.Compare(a.ID, b.ID) })
			}
		}
	}
	if evictions == 0 {
		t.Fatal("no eviction in any snapshot: the victim order was not exercised")
	}
	t.Logf("%d evictions compared", evictions)
}

// TestVictimHoldingsMatchWalk: after a cycle's rescues, what holdingBelow says the first k
// victims of every sorted queue hold equals the walk it replaces (every one of them neither
// evicted nor grown, summed), for every k.
func TestVictimHoldingsMatchWalk(t *testing.T) {
	spec := genSpec{nodes: 8, gpusPerNode: 8, depts: 2, teams: 3, jobs: 120, fractions: 0.4, gangs: 0.1, cpuOnly: 0.2, preemptible: 0.9}
	sorted, left := 0, 0
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := genRunning(r, genCluster(r, spec), spec, spec.jobs)
		genJobs(r, s, spec, spec.jobs, spec.jobs)
		c := newCycle(s, &buffers{})
		c.evictStaleGangs()
		c.buildPending()
		c.divideFairShare()
		for p := range c.parts {
			c.allocate(int32(p))
		}
		c.rescue()
		for _, vqs := range c.victims {
			for i := range vqs {
				vq := &vqs[i]
				if !vq.sorted {
					continue
				}
				sorted++
				left += len(vq.left)
				var walk vec
				for k := 0; k <= len(vq.jobs); k++ {
					if got := vq.holdingBelow(k); got != walk {
						t.Fatalf("seed %d queue %s: first %d victims hold %v, holdingBelow says %v", seed, c.queues[vq.queue].name, k, walk, got)
					}
					if k < len(vq.jobs) {
						if vj := &c.jobs[vq.jobs[k]]; !vj.evicted && !vj.grew {
							walk.add(vj.use)
						}
					}
				}
			}
		}
	}
	if sorted == 0 || left == 0 {
		t.Fatalf("%d queues sorted, %d victims left them: the bookkeeping was not exercised", sorted, left)
	}
	t.Logf("%d sorted queues checked, %d victims left them", sorted, left)
}
