package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
)

// Reservations in sreport, added up by hand on one 8-GPU node over 20 hours of
// November 10th:
//
//	hero      8 GPUs, 00:00-10:00 (10 h = 80 GPU-h), its job used 4 GPUs x 6 h = 24 GPU-h
//	fw        MAINT, 8 GPUs, 12:00-14:00 (16 GPU-h), no job
//	scratch   IGNORE_JOBS, 8 GPUs, 14:00-16:00: not tracked
//	a job outside any reservation: 2 GPUs x 4 h (16:00-20:00) = 8 GPU-h
//
// Cluster utilization 00:00-20:00 (160 GPU-h reported): allocated 24 + 8 + the 56 GPU-h
// hero held unused = 88; planned down 16; idle 160 - 88 - 16 = 56. Reservation
// utilization: hero allocated 24, idle 56; fw allocated 0, idle 16; scratch 0 and 16.
func TestReservationsInSreport(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.UpsertNode(ctx, accounting.Node{Name: "gpu-01", TRES: accounting.TRES{CPUs: 64, GPUs: 8, Nodes: 1}, Added: day(1, 0)}); err != nil {
		t.Fatal(err)
	}
	gpus8 := accounting.TRES{CPUs: 64, GPUs: 8, Nodes: 1}
	for _, r := range []accounting.Reservation{
		{Name: "hero", Start: day(10, 0), End: day(10, 10), Nodes: "gpu-01", Accounts: []string{"nlp"}, TRES: gpus8},
		{Name: "fw", Start: day(10, 12), End: day(10, 14), Nodes: "gpu-01", Flags: []string{"MAINT"}, Users: []string{"root"}, TRES: gpus8},
		{Name: "scratch", Start: day(10, 14), End: day(10, 16), Nodes: "gpu-01", Flags: []string{"IGNORE_JOBS"}, Users: []string{"bob"}, TRES: gpus8},
	} {
		if err := s.RecordReservation(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	job := func(id int64, gpus float64, start, end int, resv string) accounting.Job {
		tres := accounting.TRES{CPUs: 4, GPUs: gpus, Nodes: 1}
		return accounting.Job{JobID: id, ArrayTaskID: -1, Name: "j", User: "alice", Account: "nlp", Partition: "h100",
			Origin: accounting.OriginSlurm, Submit: day(10, 0), Start: day(10, start), End: day(10, end),
			State: accounting.StateCompleted, Requested: tres, Allocated: tres, NodeList: "gpu-01", Reservation: resv}
	}
	if err := s.UpsertJobs(ctx, []accounting.Job{job(1, 4, 2, 8, "hero"), job(2, 2, 16, 20, "")}); err != nil {
		t.Fatal(err)
	}
	const h = 3600.0
	q := SreportQuery{Start: day(10, 0), End: day(10, 20), Units: Hours}
	util, err := ClusterUtilization(ctx, s, q, now)
	if err != nil {
		t.Fatal(err)
	}
	if u := util[0]; u.Allocated != 88*h || u.PlannedDown != 16*h || u.Down != 0 || u.Idle != 56*h || u.Reported != 160*h {
		t.Fatalf("cluster utilization %+v, want allocated 88 h, planned down 16 h, idle 56 h of 160 h (GPU-seconds)", u)
	}
	rows, err := ReservationUtilization(ctx, s, q, now)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{}
	for _, r := range rows {
		got[r.Name] = [2]float64{r.Allocated / h, r.Idle / h}
	}
	want := map[string][2]float64{"hero": {24, 56}, "fw": {0, 16}, "scratch": {0, 16}}
	if len(got) != len(want) || got["hero"] != want["hero"] || got["fw"] != want["fw"] || got["scratch"] != want["scratch"] {
		t.Fatalf("reservation utilization (allocated, idle GPU-h) %v, want %v", got, want)
	}
	table := ReservationTable(rows, q)
	var b strings.Builder
	if err := table.WriteText(&b, TextOptions{Parsable2: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{"Reservation Utilization 2026-11-10T00:00:00 - 2026-11-10T19:59:59",
		"Cluster|Name|Start|End|TRES Name|Allocated|Idle\n",
		"sluice|hero|2026-11-10T00:00:00|2026-11-10T10:00:00|gres/gpu|24|56\n",
		"sluice|fw|2026-11-10T12:00:00|2026-11-10T14:00:00|gres/gpu|0|16\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("table lacks %q:\n%s", line, out)
		}
	}
}
