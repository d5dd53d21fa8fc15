package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// A reservation's windows round-trip, a moved end rewrites its window (keyed by name and
// start), windows are found by overlap, a window that never opened can be forgotten, and a
// bad one writes nothing.
func TestReservationWindows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		daily := accounting.Reservation{Name: "class", Start: at(0), End: at(3600), Nodes: "h100-[0-1]",
			Flags: []string{"DAILY"}, Accounts: []string{"nlp"}, Users: []string{"alice", "bob"},
			TRES: accounting.TRES{CPUs: 128, MemMB: 1 << 20, GPUs: 16, GPUMemMB: 16 * 81920, Nodes: 2}}
		next := daily
		next.Start, next.End = at(86400), at(86400+3600)
		maint := accounting.Reservation{Name: "fw", Start: at(7200), End: at(9000), Nodes: "h100-3",
			Flags: []string{"MAINT", "IGNORE_JOBS"}, Users: []string{"root"}, TRES: accounting.TRES{GPUs: 8, Nodes: 1}}
		for _, r := range []accounting.Reservation{daily, next, maint} {
			if err := s.RecordReservation(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		maint.End = at(8000) // cut short
		if err := s.RecordReservation(ctx, maint); err != nil {
			t.Fatal(err)
		}
		got, err := s.Reservations(ctx, at(1800), at(7500))
		if err != nil {
			t.Fatal(err)
		}
		if want := []accounting.Reservation{daily, maint}; !reflect.DeepEqual(got, want) {
			t.Fatalf("windows overlapping [1800, 7500):\n got %+v\nwant %+v", got, want)
		}
		if !got[1].HasFlag("maint") || got[0].HasFlag("MAINT") {
			t.Errorf("flags read back wrong: %v, %v", got[0].Flags, got[1].Flags)
		}
		if err := s.ForgetReservation(ctx, "class", at(86400)); err != nil {
			t.Fatal(err)
		}
		if all, err := s.Reservations(ctx, time.Time{}, time.Time{}); err != nil || len(all) != 2 {
			t.Fatalf("after forgetting tomorrow's window: %+v, %v; want today's and fw", all, err)
		}
		for _, bad := range []accounting.Reservation{{Start: at(0), End: at(1)}, {Name: "x", Start: at(5), End: at(1)}, {Name: "y", End: at(1)}} {
			if err := s.RecordReservation(ctx, bad); err == nil {
				t.Errorf("%+v was accepted", bad)
			}
		}
	})
}
