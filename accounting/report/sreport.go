package report

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// TimeUnit is sreport's -t: how TRES time is printed.
type TimeUnit string

// Units.
const (
	Seconds TimeUnit = "Seconds"
	Minutes TimeUnit = "Minutes"
	Hours   TimeUnit = "Hours"
	Percent TimeUnit = "Percent"
)

// ParseTimeUnit accepts sreport's -t values (any case, any unambiguous
// prefix: s, m, h, p). The empty string is Slurm's default, minutes.
func ParseTimeUnit(s string) (TimeUnit, error) {
	if s == "" {
		return Minutes, nil
	}
	l := strings.ToLower(s)
	for _, u := range []TimeUnit{Seconds, Minutes, Hours, Percent} {
		if strings.HasPrefix(strings.ToLower(string(u)), l) {
			return u, nil
		}
	}
	return "", fmt.Errorf("unknown time unit %q (want seconds, minutes, hours or percent)", s)
}

// SreportQuery is what every sreport report takes.
type SreportQuery struct {
	Start, End time.Time // the window [Start, End); required
	TRES       []string  // -T; nil means gres/gpu
	Units      TimeUnit  // -t; "" means minutes
	Cluster    string    // the name printed; "" means "sluice"
	Users      []string  // Users=
	Accounts   []string  // Accounts=
	TopCount   int       // TopCount= for user TopUsage; 0 means 10
	Grouping   []float64 // Grouping= for job SizesByAccount; nil means Slurm's for CPUs, 1,2,4,8 for GPUs
	// Parents is the account tree (account -> parent account, the Queue
	// tree). With it, AccountUtilizationByUser totals every parent account
	// over its sub-accounts; accounts not listed hang under root.
	Parents map[string]string
}

func (q SreportQuery) normalize(now time.Time) (SreportQuery, error) {
	if q.Start.IsZero() || q.End.IsZero() {
		return q, fmt.Errorf("sreport: start and end are required")
	}
	if !q.End.After(q.Start) {
		return q, fmt.Errorf("sreport: end %s is not after start %s", slurmTime(q.End), slurmTime(q.Start))
	}
	if q.TRES == nil {
		q.TRES = []string{accounting.TRESGPU}
	}
	for _, n := range q.TRES {
		if (accounting.TRES{}).Amount(n) < 0 {
			return q, fmt.Errorf("sreport: unknown TRES %q", n)
		}
	}
	if q.Units == "" {
		q.Units = Minutes
	}
	if q.Cluster == "" {
		q.Cluster = "sluice"
	}
	if q.TopCount == 0 {
		q.TopCount = 10
	}
	if q.TopCount < 0 {
		return q, fmt.Errorf("sreport: TopCount %d is negative", q.TopCount)
	}
	return q, nil
}

// overlap is how many seconds [a, b) (b zero: still open, so until now)
// spends inside [from, to) and before now.
func overlap(a, b, from, to, now time.Time) float64 {
	if b.IsZero() || b.After(now) {
		b = now
	}
	if to.After(now) {
		to = now
	}
	if a.Before(from) {
		a = from
	}
	if b.After(to) {
		b = to
	}
	if !b.After(a) {
		return 0
	}
	return b.Sub(a).Seconds()
}

// banner is sreport's title block.
func (q SreportQuery) banner(title string) []string {
	dashes := strings.Repeat("-", 80)
	unit := "Usage reported in TRES " + string(q.Units)
	if q.Units == Percent {
		unit = "Usage reported in Percentage of Total"
	}
	return []string{dashes, fmt.Sprintf("%s %s - %s", title, slurmTime(q.Start), slurmTime(q.End.Add(-time.Second))), unit, dashes}
}

// formatTime prints TRES-seconds in the query's unit; percent is of total.
// Minutes and hours are whole, cut down as Slurm's integer division does.
func formatTime(secs, total float64, u TimeUnit) string {
	switch u {
	case Percent:
		if total <= 0 {
			return "0.00%"
		}
		return fmt.Sprintf("%.2f%%", secs/total*100)
	case Hours:
		return strconv.FormatInt(int64(math.Floor(secs/3600+1e-9)), 10)
	case Minutes:
		return strconv.FormatInt(int64(math.Floor(secs/60+1e-9)), 10)
	}
	return strconv.FormatInt(int64(math.Round(secs)), 10)
}

// UtilizationRow is one TRES of cluster Utilization, in TRES-seconds.
type UtilizationRow struct {
	Cluster     string  `json:"cluster"`
	TRES        string  `json:"tres"`
	Allocated   float64 `json:"allocated_seconds"`
	Down        float64 `json:"down_seconds"`
	PlannedDown float64 `json:"planned_down_seconds"`
	Idle        float64 `json:"idle_seconds"`
	Planned     float64 `json:"planned_seconds"`
	Reported    float64 `json:"reported_seconds"`
}

// ClusterUtilization is sreport cluster Utilization: per TRES, the time
// allocated to jobs, down (remediation), planned down (maintenance
// reservations), idle and reported (capacity: the recorded nodes' TRES over
// the window); reserved time no job used counts as Slurm counts it
// (sreport_resv.go). Without recorded nodes, reported is allocated plus down
// and planned down. Nothing after now counts.
func ClusterUtilization(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) ([]UtilizationRow, error) {
	q, err := q.normalize(now)
	if err != nil {
		return nil, err
	}
	runs, err := s.Runs(ctx, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	downs, err := s.NodeDowns(ctx, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	resvs, err := s.Reservations(ctx, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	capacity := map[string]accounting.TRES{}
	for _, n := range nodes {
		capacity[n.Name] = n.TRES
	}
	var out []UtilizationRow
	for _, name := range q.TRES {
		r := UtilizationRow{Cluster: q.Cluster, TRES: name}
		for _, run := range runs {
			r.Allocated += run.Allocated.Amount(name) * overlap(run.Start, run.End, q.Start, q.End, now)
		}
		for _, d := range downs {
			lost := d.TRES
			if lost == (accounting.TRES{}) {
				lost = capacity[d.Node] // a whole node went down
			}
			r.Down += lost.Amount(name) * overlap(d.Start, d.End, q.Start, q.End, now)
		}
		addReservations(&r, resvs, runs, q, now)
		for _, n := range nodes {
			r.Reported += n.TRES.Amount(name) * overlap(n.Added, n.Removed, q.Start, q.End, now)
		}
		if len(nodes) == 0 {
			r.Reported = r.Allocated + r.Down + r.PlannedDown
		}
		r.Idle = math.Max(0, r.Reported-r.Allocated-r.Down-r.PlannedDown)
		out = append(out, r)
	}
	return out, nil
}

// UtilizationTable lays out cluster Utilization as sreport does.
func UtilizationTable(rows []UtilizationRow, q SreportQuery) Table {
	q, _ = q.normalize(time.Now()) // defaults only; the query was checked when rows were made
	t := Table{Title: q.banner("Cluster Utilization"), Columns: []Column{{"Cluster", 9}, {"TRES Name", 14},
		{"Allocated", 12}, {"Down", 10}, {"PLND Down", 10},
		{"Idle", 12}, {"Planned", 9}, {"Reported", 12}}}
	for _, r := range rows {
		f := func(v float64) string { return formatTime(v, r.Reported, q.Units) }
		t.Rows = append(t.Rows, []string{r.Cluster, r.TRES, f(r.Allocated), f(r.Down), f(r.PlannedDown),
			f(r.Idle), f(r.Planned), f(r.Reported)})
	}
	return t
}
