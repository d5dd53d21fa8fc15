package bridge

import (
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

// A reused Scheduler carries unchanged jobs' running tasks over; whatever changed between
// cycles (the jobs' order, a node gone, a device's memory, a job's tasks) it must decide
// exactly as a fresh one does.
func TestCarriedRunningTasksDecideAsResolved(t *testing.T) {
	spec := genSpec{nodes: 12, gpusPerNode: 8, depts: 2, teams: 3, jobs: 80, fractions: 0.4, gangs: 0.2, cpuOnly: 0.1, preemptible: 0.7}
	changes := []struct {
		name  string
		carry bool // whether running tasks are still carried over after the change
		// lost is set when the change leaves tasks running on a node the snapshot no longer
		// has: a problem to report, so those are resolved in every cycle.
		lost  bool
		apply func(r *rand.Rand, s *Snapshot)
	}{
		{"nothing", true, false, func(*rand.Rand, *Snapshot) {}},
		{"jobs listed in another order", true, false, func(r *rand.Rand, s *Snapshot) {
			s.Jobs = slices.Clone(s.Jobs)
			r.Shuffle(len(s.Jobs), func(i, j int) { s.Jobs[i], s.Jobs[j] = s.Jobs[j], s.Jobs[i] })
		}},
		{"a job's tasks changed", true, false, func(r *rand.Rand, s *Snapshot) {
			s.Jobs = slices.Clone(s.Jobs)
			for i := range s.Jobs {
				if j := &s.Jobs[i]; len(j.Running) > 1 {
					j.Running = slices.Clone(j.Running[1:])
					return
				}
			}
		}},
		{"a node gone", false, true, func(r *rand.Rand, s *Snapshot) {
			s.Nodes = slices.Delete(slices.Clone(s.Nodes), 3, 4)
		}},
		{"a node's CPU changed", false, false, func(r *rand.Rand, s *Snapshot) {
			s.Nodes = slices.Clone(s.Nodes)
			s.Nodes[2].Allocatable.CPUMilli -= 1000
		}},
		{"a device's memory changed", false, false, func(r *rand.Rand, s *Snapshot) {
			s.Nodes = slices.Clone(s.Nodes)
			n := &s.Nodes[5]
			n.GPUs = slices.Clone(n.GPUs)
			n.GPUs[0].MemoryMiB /= 2
		}},
	}
	for _, ch := range changes {
		t.Run(ch.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(7))
			s := genRunning(r, genCluster(r, spec), spec, spec.jobs)
			genJobs(r, s, spec, spec.jobs, spec.jobs/2)
			sched := &Scheduler{}
			sched.Schedule(s)
			ch.apply(r, s)
			got := sched.Schedule(s)
			if want := Schedule(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("carried over, different decisions:\n%s\nvs a fresh Scheduler:\n%s", dump(got), dump(want))
			}
			if k := &sched.buf.carry; (k.taken > 0) != ch.carry {
				t.Fatalf("%d running tasks carried over, %d resolved; want carried: %v", k.taken, k.resolved, ch.carry)
			}
			// The cycle after the change carries everything again.
			got = sched.Schedule(s)
			if want := Schedule(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("next cycle, different decisions:\n%s\nvs\n%s", dump(got), dump(want))
			}
			if k := &sched.buf.carry; (k.resolved > 0) != ch.lost || k.taken == 0 {
				t.Fatalf("next cycle: %d running tasks carried over, %d resolved; want all carried", k.taken, k.resolved)
			}
		})
	}
}

// A device's Taken list may name a job's own running task (ignored: its job's placement
// counts) beside another scheduler's task (counted), also for a task carried over.
func TestTakenNamingAJobsTaskIsNotCountedTwice(t *testing.T) {
	s := &Snapshot{
		Partitions: []Partition{{Name: "p"}},
		Queues:     []Queue{{Name: "q"}},
		Nodes: []Node{{Name: "n", Partition: "p", Allocatable: Resources{CPUMilli: 64000, MemoryBytes: 1 << 40},
			GPUs: []GPU{{Index: 0, MemoryMiB: 80000, Taken: []GPUTaken{{Task: "a-0", Milli: 500}, {Task: "other", Milli: 300, MemoryMiB: 24000}}}}}},
		Jobs: []Job{{ID: "a", Queue: "q", Partition: "p", Groups: []TaskGroup{{Name: "g", Count: 1, GPU: GPURequest{Kind: GPUFraction, Milli: 500}}},
			Running: []RunningTask{{Name: "a-0", Group: "g", Node: "n", GPUs: []int32{0}}}}},
	}
	sched := &Scheduler{}
	for cycle := range 3 { // resolved, then carried over
		c := newCycle(s, &sched.buf)
		if g := c.gpus[0]; g.milli != 800 || g.sharers != 2 {
			t.Fatalf("cycle %d: device holds %d thousandths for %d sharers, want 800 for 2 (the job's 500 and the other's 300)", cycle, g.milli, g.sharers)
		}
		sched.buf.keep(c)
	}
	if sched.buf.carry.taken == 0 {
		t.Error("the job's task was never carried over")
	}
}
