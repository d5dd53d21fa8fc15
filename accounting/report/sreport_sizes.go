package report

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// SizesRow is one account of sreport job SizesByAccount: TRES time of its
// jobs, binned by how much of the grouping TRES each job held.
type SizesRow struct {
	Cluster string    `json:"cluster"`
	Account string    `json:"account"`
	TRES    string    `json:"tres"`
	Bins    []float64 `json:"bin_seconds"`
	Total   float64   `json:"cluster_seconds"` // what the percentages are of
}

// Sizes is the whole report: the bin labels and a row per account.
type Sizes struct {
	Labels []string   `json:"bins"`
	Rows   []SizesRow `json:"accounts"`
}

// grouping returns the bin lower bounds after the first (Slurm's Grouping=).
func (q SreportQuery) grouping() ([]float64, error) {
	g := q.Grouping
	if g == nil {
		if q.TRES[0] == accounting.TRESCPU {
			g = []float64{50, 250, 500, 1000}
		} else {
			g = []float64{1, 2, 4, 8}
		}
	}
	for i := 1; i < len(g); i++ {
		if g[i] <= g[i-1] {
			return nil, fmt.Errorf("sreport Grouping must increase: %v", g)
		}
	}
	if len(g) == 0 || g[0] <= 0 {
		return nil, fmt.Errorf("sreport Grouping must start above 0: %v", g)
	}
	return g, nil
}

// unitName is how SizesByAccount names the grouping TRES in its bin labels.
func unitName(tres string) string {
	switch tres {
	case accounting.TRESCPU:
		return "CPUs"
	case accounting.TRESGPU:
		return "GPUs"
	}
	return tres
}

func sizeLabels(g []float64, tres string) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	u := unitName(tres)
	labels := []string{fmt.Sprintf("0-%s %s", f(g[0]-1), u)}
	for i := 1; i < len(g); i++ {
		labels = append(labels, fmt.Sprintf("%s-%s %s", f(g[i-1]), f(g[i]-1), u))
	}
	return append(labels, fmt.Sprintf(">= %s %s", f(g[len(g)-1]), u))
}

func bin(g []float64, v float64) int {
	i := 0
	for i < len(g) && v >= g[i] {
		i++
	}
	return i
}

// JobSizesByAccount is sreport job SizesByAccount for the first selected
// TRES: each job's time in the window, binned by its allocation of that TRES.
func JobSizesByAccount(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) (Sizes, error) {
	q, err := q.normalize(now)
	if err != nil {
		return Sizes{}, err
	}
	g, err := q.grouping()
	if err != nil {
		return Sizes{}, err
	}
	runs, err := s.Runs(ctx, q.Start, q.End)
	if err != nil {
		return Sizes{}, err
	}
	tres := q.TRES[0]
	rows := map[string]*SizesRow{}
	total := 0.0
	for _, r := range runs {
		amount := r.Allocated.Amount(tres)
		used := amount * overlap(r.Start, r.End, q.Start, q.End, now)
		if used == 0 {
			continue
		}
		total += used
		if !q.wants(accounting.Assoc{Account: r.Account, User: r.User}) {
			continue
		}
		row := rows[r.Account]
		if row == nil {
			row = &SizesRow{Cluster: q.Cluster, Account: r.Account, TRES: tres, Bins: make([]float64, len(g)+1)}
			rows[r.Account] = row
		}
		row.Bins[bin(g, amount)] += used
	}
	out := Sizes{Labels: sizeLabels(g, tres)}
	for _, acct := range sortedKeys(rows) {
		rows[acct].Total = total
		out.Rows = append(out.Rows, *rows[acct])
	}
	return out, nil
}

// SizesTable lays out job SizesByAccount as sreport does: a column per bin
// and the account's share of the cluster.
func SizesTable(sz Sizes, q SreportQuery) Table {
	q, _ = q.normalize(time.Now()) // defaults only
	dashes := q.banner("")[0]
	unit := "Time reported in " + string(q.Units)
	if q.Units == Percent {
		unit = "Time reported in Percentage of Total"
	}
	title := []string{dashes, fmt.Sprintf("Job Sizes %s - %s (%d secs)", slurmTime(q.Start), slurmTime(q.End.Add(-time.Second)),
		int64(q.End.Sub(q.Start).Seconds())), unit, dashes}
	cols := []Column{{"Cluster", 9}, {"Account", -20}}
	for _, l := range sz.Labels {
		cols = append(cols, Column{l, 13})
	}
	cols = append(cols, Column{"% of cluster", 12})
	t := Table{Title: title, Columns: cols}
	sort.SliceStable(sz.Rows, func(i, k int) bool { return sz.Rows[i].Account < sz.Rows[k].Account })
	for _, r := range sz.Rows {
		cells := []string{r.Cluster, r.Account}
		sum := 0.0
		for _, v := range r.Bins {
			cells = append(cells, formatTime(v, r.Total, q.Units))
			sum += v
		}
		pct := 0.0
		if r.Total > 0 {
			pct = sum / r.Total * 100
		}
		t.Rows = append(t.Rows, append(cells, fmt.Sprintf("%.2f%%", pct)))
	}
	return t
}
