package dashboard

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/report"
)

// The usage figures a caller may see (Viewer.CanSeeUsage, Slurm's
// PrivateData=usage) are applied here. Figures by user or account (GPU-hours,
// TopUsage, sreport's association reports, SizesByAccount) are added up from
// the runs the caller may see, so a hidden user's usage is in no total they
// get; the fair-share tree hides rows instead, since every row's standing
// depends on all the others. Cluster-wide figures (cluster Utilization, the
// overview, NodeHealth) read the whole ledger: Slurm keeps cluster usage public.

// usageView is the ledger with Runs narrowed to the runs v may see the usage of.
type usageView struct {
	accounting.Store
	v       Viewer
	dropped bool // a run was left out: totals over the runs are not the cluster's
}

func (u *usageView) Runs(ctx context.Context, from, to time.Time) ([]accounting.RunUsage, error) {
	runs, err := u.Store.Runs(ctx, from, to)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(runs, func(r accounting.RunUsage) bool {
		hide := !u.v.CanSeeUsage(r.User, r.Account)
		u.dropped = u.dropped || hide
		return hide
	}), nil
}

// usageOf is the ledger as the request's caller may see its usage.
func (d *Dashboard) usageOf(r *http.Request) *usageView {
	return &usageView{Store: d.cfg.Store, v: viewerOf(r.Context())}
}

// clusterTotals is each TRES's allocated time in the window over the whole
// ledger, what sreport's percentages are of (as public as cluster
// Utilization); nil when u left nothing out, as the report's totals are then
// the cluster's already.
func (d *Dashboard) clusterTotals(ctx context.Context, u *usageView, q report.SreportQuery, now time.Time) (map[string]float64, error) {
	if !u.dropped {
		return nil, nil
	}
	rows, err := report.ClusterUtilization(ctx, d.cfg.Store, q, now)
	if err != nil {
		return nil, err
	}
	totals := make(map[string]float64, len(rows))
	for _, r := range rows {
		totals[r.TRES] = r.Allocated
	}
	return totals, nil
}

type assocReport func(context.Context, accounting.Store, report.SreportQuery, time.Time) ([]report.AssocUsage, error)

// assocUsage runs an association report (AccountUtilizationByUser,
// UserUtilizationByAccount, TopUsage) as the caller may see it: over its runs,
// with percentages of the whole cluster, and without the account rows (root's
// included) whose own usage it may not see.
func (d *Dashboard) assocUsage(r *http.Request, get assocReport, q report.SreportQuery, now time.Time) ([]report.AssocUsage, error) {
	u := d.usageOf(r)
	rows, err := get(r.Context(), u, q, now)
	if err != nil {
		return nil, err
	}
	rows = slices.DeleteFunc(rows, func(row report.AssocUsage) bool { return row.User == "" && !u.v.CanSeeUsage("", row.Account) })
	totals, err := d.clusterTotals(r.Context(), u, q, now)
	if err != nil || totals == nil {
		return rows, err
	}
	for i := range rows {
		rows[i].Total = totals[rows[i].TRES]
	}
	return rows, nil
}

// sizes is sreport job SizesByAccount over the caller's runs, with percentages
// of the whole cluster.
func (d *Dashboard) sizes(r *http.Request, q report.SreportQuery, now time.Time) (report.Sizes, error) {
	u := d.usageOf(r)
	sz, err := report.JobSizesByAccount(r.Context(), u, q, now)
	if err != nil {
		return sz, badRequest("grouping", "%v", err)
	}
	totals, err := d.clusterTotals(r.Context(), u, q, now)
	if err != nil || totals == nil {
		return sz, err
	}
	for i := range sz.Rows {
		sz.Rows[i].Total = totals[sz.Rows[i].TRES]
	}
	return sz, nil
}

// visibleShareRows keeps the fair-share rows v may see.
func visibleShareRows(v Viewer, rows []accounting.ShareRow) []accounting.ShareRow {
	return slices.DeleteFunc(rows, func(row accounting.ShareRow) bool { return !v.CanSeeUsage(row.User, row.Account) })
}
