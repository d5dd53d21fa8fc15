package bridge

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func dump(d *Decisions) string {
	var b strings.Builder
	for _, x := range d.Binds {
		fmt.Fprintf(&b, "  bind %s/%s -> %s gpus=%v milli=%d mem=%d %s after=%v\n", x.Job, x.Task, x.Node, x.GPUs, x.GPUMilli, x.GPUMemoryMiB, x.Action, x.AfterEvictions)
	}
	for _, x := range d.Evictions {
		fmt.Fprintf(&b, "  evict %s/%s on %s %s for %s: %s\n", x.Job, x.Task, x.Node, x.Kind, x.ForJob, x.Reason)
	}
	for _, x := range d.Pending {
		fmt.Fprintf(&b, "  pending %s (%s) %s\n", x.Job, x.Code, x.Reason)
	}
	for _, x := range d.Shares {
		fmt.Fprintf(&b, "  share %s/%s fair=%d alloc=%d req=%d\n", x.Queue, x.Partition, x.FairShare.GPUMilli, x.Allocated.GPUMilli, x.Requested.GPUMilli)
	}
	for _, x := range d.Reservations {
		fmt.Fprintf(&b, "  reservation %s %s %v\n", x.Job, x.Partition, x.Nodes)
	}
	for _, x := range d.Problems {
		fmt.Fprintf(&b, "  problem %s: %s\n", x.Object, x.Message)
	}
	return b.String()
}

func checkExpect(t *testing.T, e scExpect, d *Decisions) {
	t.Helper()
	want := map[string]int{}
	if e.AnyBinds {
		want = nil
	}
	for _, b := range e.Binds {
		want[b.Job+" on "+b.Node] += max(b.Count, 1)
	}
	got := map[string]int{}
	for _, b := range d.Binds {
		got[b.Job+" on "+b.Node]++
	}
	for _, k := range keysOf(want, got) {
		if want != nil && want[k] != got[k] {
			t.Errorf("binds of %s: got %d, want %d", k, got[k], want[k])
		}
	}
	for _, b := range e.Binds {
		if len(b.GPUs) == 0 && b.Fraction == 0 && b.Memory == 0 && !b.After {
			continue
		}
		if !slices.ContainsFunc(d.Binds, func(x Bind) bool {
			return x.Job == b.Job && x.Node == b.Node && (len(b.GPUs) == 0 || slices.Equal(indices(x.GPUs), b.GPUs)) &&
				(!b.After || x.AfterEvictions) &&
				(b.Fraction == 0 || int64(x.GPUMilli) == milli(b.Fraction)) && (b.Memory == 0 || x.GPUMemoryMiB == b.Memory)
		}) {
			t.Errorf("no bind of %s on %s with GPUs %v fraction %v memory %d", b.Job, b.Node, b.GPUs, b.Fraction, b.Memory)
		}
	}
	wantEv, gotEv := map[string]int{}, map[string]int{}
	for _, x := range e.Evictions {
		wantEv[x.Job+" "+string(x.Kind)+" for "+x.For] = 1
	}
	for _, x := range d.Evictions {
		gotEv[x.Job+" "+string(x.Kind)+" for "+x.ForJob] = 1
		if x.Reason == "" {
			t.Errorf("eviction of %s has no reason", x.Task)
		}
	}
	for _, k := range keysOf(wantEv, gotEv) {
		if wantEv[k] != gotEv[k] {
			t.Errorf("eviction %q: got %v, want %v", k, gotEv[k] == 1, wantEv[k] == 1)
		}
	}
	for _, p := range e.Pending {
		i := slices.IndexFunc(d.Pending, func(x Pending) bool { return x.Job == p.Job })
		switch {
		case i < 0:
			t.Errorf("job %s not pending, want (%s) %q", p.Job, p.Code, p.Reason)
		case d.Pending[i].Code != p.Code || !strings.Contains(d.Pending[i].Reason, p.Reason):
			t.Errorf("job %s pending (%s) %q, want (%s) containing %q", p.Job, d.Pending[i].Code, d.Pending[i].Reason, p.Code, p.Reason)
		}
	}
	for _, s := range e.Shares {
		i := slices.IndexFunc(d.Shares, func(x QueueShare) bool {
			return x.Queue == s.Queue && (s.Partition == "" || x.Partition == s.Partition)
		})
		if i < 0 {
			t.Errorf("no share for queue %s", s.Queue)
			continue
		}
		if got := d.Shares[i].FairShare.GPUMilli; s.FairGPU != nil && got != milli(*s.FairGPU) {
			t.Errorf("queue %s fair share %.3f GPUs, want %.3f", s.Queue, float64(got)/1000, *s.FairGPU)
		}
		if s.AllocGPU != nil && d.Shares[i].Allocated.GPUMilli != milli(*s.AllocGPU) {
			t.Errorf("queue %s allocated %.3f GPUs, want %.3f", s.Queue, float64(d.Shares[i].Allocated.GPUMilli)/1000, *s.AllocGPU)
		}
	}
	if e.Reservations != nil && !slices.EqualFunc(e.Reservations, d.Reservations, func(a, b Reservation) bool {
		return a.Job == b.Job && slices.Equal(a.Nodes, b.Nodes)
	}) {
		t.Errorf("reservations %+v, want %+v", d.Reservations, e.Reservations)
	}
	if !slices.Equal(e.Yields, d.Yields) {
		t.Errorf("yields %+v, want %+v", d.Yields, e.Yields)
	}
	if len(e.Problems) != len(d.Problems) {
		t.Errorf("%d problems, want %d", len(d.Problems), len(e.Problems))
	}
	for _, p := range e.Problems {
		if !slices.ContainsFunc(d.Problems, func(x Problem) bool { return strings.Contains(x.Object+": "+x.Message, p) }) {
			t.Errorf("no problem mentioning %q", p)
		}
	}
}

func indices(gs []BoundGPU) []int32 {
	out := make([]int32, len(gs))
	for i, g := range gs {
		out[i] = g.Index
	}
	return out
}

func keysOf(a, b map[string]int) []string {
	var ks []string
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}
