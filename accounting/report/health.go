package report

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// HealthRow is one partition's node health over a window (sreport cluster NodeHealth):
// how much of its node time was in service, how often its nodes faulted, and how their
// validations went. Times are node-seconds; a GPU-local fault counts as the share of the
// node's GPUs it took out.
type HealthRow struct {
	Cluster   string  `json:"cluster"`
	Partition string  `json:"partition"`
	Nodes     int     `json:"nodes"`
	Reported  float64 `json:"reported_seconds"`
	Down      float64 `json:"down_seconds"`
	// Availability is the share of Reported not down, 0..1 (1 without reported time).
	Availability float64 `json:"availability"`
	Faults       int     `json:"faults"`
	// MTBF is the in-service node-seconds per fault; 0 without faults.
	MTBF      float64 `json:"mtbf_seconds"`
	Passed    int     `json:"validations_passed"`
	Failed    int     `json:"validations_failed"`
	Preempted int     `json:"validations_preempted"`
}

// NodeHealth is sreport cluster NodeHealth: per partition, node availability and mean
// time between faults from the ledger's node and down records, and the validations run.
// Nothing after now counts.
func NodeHealth(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) ([]HealthRow, error) {
	q, err := q.normalize(now)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	downs, err := s.NodeDowns(ctx, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	runs, err := s.NodeValidations(ctx, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	rows := map[string]*HealthRow{}
	row := func(p string) *HealthRow {
		if rows[p] == nil {
			rows[p] = &HealthRow{Cluster: q.Cluster, Partition: p}
		}
		return rows[p]
	}
	byName := map[string]accounting.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
		if t := overlap(n.Added, n.Removed, q.Start, q.End, now); t > 0 {
			r := row(n.Partition)
			r.Nodes++
			r.Reported += t
		}
	}
	for _, d := range downs {
		n := byName[d.Node]
		share := 1.0 // the whole node
		if d.TRES.GPUs > 0 && n.TRES.GPUs > 0 && d.TRES.GPUs < n.TRES.GPUs {
			share = d.TRES.GPUs / n.TRES.GPUs
		}
		r := row(n.Partition)
		r.Down += share * overlap(d.Start, d.End, q.Start, q.End, now)
		if !d.Start.Before(q.Start) && d.Start.Before(q.End) {
			r.Faults++
		}
	}
	for _, v := range runs {
		p := v.Partition
		if p == "" {
			p = byName[v.Node].Partition
		}
		switch r := row(p); v.Result {
		case "Passed":
			r.Passed++
		case "Failed":
			r.Failed++
		case "Preempted":
			r.Preempted++
		}
	}
	out := make([]HealthRow, 0, len(rows))
	for _, r := range rows {
		r.Availability = 1
		if r.Reported > 0 {
			r.Availability = max(0, 1-r.Down/r.Reported)
		}
		if r.Faults > 0 {
			r.MTBF = max(0, r.Reported-r.Down) / float64(r.Faults)
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// HealthTable lays out NodeHealth in sreport's style; times in the query's unit
// (percent shows down time as a share of reported).
func HealthTable(rows []HealthRow, q SreportQuery) Table {
	q, _ = q.normalize(time.Now()) // defaults only; the query was checked when rows were made
	t := Table{Title: q.banner("Node Health by Partition"), Columns: []Column{{"Cluster", 9}, {"Partition", 10},
		{"Nodes", 6}, {"Reported", 12}, {"Down", 10}, {"Available", 10}, {"Faults", 7}, {"MTBF", 12},
		{"Passed", 7}, {"Failed", 7}, {"Preempted", 9}}}
	for _, r := range rows {
		mtbf := "-"
		if r.Faults > 0 {
			mtbf = formatTime(r.MTBF, r.Reported, q.Units)
		}
		t.Rows = append(t.Rows, []string{r.Cluster, orNone(r.Partition), strconv.Itoa(r.Nodes),
			formatTime(r.Reported, r.Reported, q.Units), formatTime(r.Down, r.Reported, q.Units),
			fmt.Sprintf("%.2f%%", r.Availability*100), strconv.Itoa(r.Faults), mtbf,
			strconv.Itoa(r.Passed), strconv.Itoa(r.Failed), strconv.Itoa(r.Preempted)})
	}
	return t
}

func orNone(p string) string {
	if p == "" {
		return "(none)"
	}
	return p
}
