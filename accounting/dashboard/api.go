package dashboard

import (
	"context"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/report"
)

// Overview is the page's headline: the window, GPU utilization over it, jobs by state
// and the GPUs held now.
type Overview struct {
	Cluster     string                      `json:"cluster"`
	Start       time.Time                   `json:"start"`
	End         time.Time                   `json:"end"`
	Utilization report.UtilizationRow       `json:"gpu_utilization"`
	JobsByState map[accounting.JobState]int `json:"jobs_by_state"`
	GPUsHeld    float64                     `json:"gpus_held_now"`
}

func (d *Dashboard) overview(r *http.Request) (any, error) {
	now := d.cfg.Clock()
	start, end, err := window(r.URL.Query(), now)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	rows, err := report.ClusterUtilization(ctx, d.cfg.Store, report.SreportQuery{Start: start, End: end,
		TRES: []string{accounting.TRESGPU}, Cluster: d.cfg.Cluster}, now)
	if err != nil {
		return nil, err
	}
	jobs, err := d.cfg.Store.Jobs(ctx, accounting.JobFilter{Start: start, End: end})
	if err != nil {
		return nil, err
	}
	o := Overview{Cluster: d.cfg.Cluster, Start: start, End: end, Utilization: rows[0], JobsByState: map[accounting.JobState]int{}}
	for _, j := range jobs {
		o.JobsByState[j.State]++
	}
	held, err := d.cfg.Store.Runs(ctx, now, now.Add(time.Second))
	if err != nil {
		return nil, err
	}
	for _, run := range held {
		o.GPUsHeld += run.Allocated.GPUs
	}
	return o, nil
}

// GPUHours is GPU-hours per account in consecutive buckets of the window.
type GPUHours struct {
	Start         time.Time      `json:"start"`
	End           time.Time      `json:"end"`
	BucketSeconds int64          `json:"bucket_seconds"`
	Buckets       []time.Time    `json:"buckets"` // each bucket's start
	Series        []AccountHours `json:"series"`  // most GPU-hours first
}

// AccountHours is one account's line of GPUHours.
type AccountHours struct {
	Account string    `json:"account"`
	Hours   []float64 `json:"gpu_hours"`
	Total   float64   `json:"total_gpu_hours"`
}

// bucketFor picks a bucket that gives a readable number of bars: hours for up to two
// days, else days.
func bucketFor(span time.Duration) time.Duration {
	if span <= 48*time.Hour {
		return time.Hour
	}
	return 24 * time.Hour
}

// maxBuckets bounds the series a request can ask for.
const maxBuckets = 2000

func (d *Dashboard) gpuHours(r *http.Request) (any, error) {
	now := d.cfg.Clock()
	q := r.URL.Query()
	start, end, err := window(q, now)
	if err != nil {
		return nil, err
	}
	bucket := bucketFor(end.Sub(start))
	switch q.Get("bucket") {
	case "":
	case "hour":
		bucket = time.Hour
	case "day":
		bucket = 24 * time.Hour
	default:
		return nil, badRequest("bucket", "bucket %q: want hour or day", q.Get("bucket"))
	}
	n := int((end.Sub(start) + bucket - 1) / bucket)
	if n > maxBuckets {
		return nil, badRequest("bucket", "%d buckets of %s: at most %d; choose a longer bucket or a shorter window", n, bucket, maxBuckets)
	}
	runs, err := d.usageOf(r).Runs(r.Context(), start, end)
	if err != nil {
		return nil, err
	}
	out := GPUHours{Start: start, End: end, BucketSeconds: int64(bucket.Seconds())}
	for i := range n {
		out.Buckets = append(out.Buckets, start.Add(time.Duration(i)*bucket))
	}
	byAccount := map[string]*AccountHours{}
	for _, run := range runs {
		if run.Allocated.GPUs == 0 {
			continue
		}
		a := byAccount[run.Account]
		if a == nil {
			a = &AccountHours{Account: run.Account, Hours: make([]float64, n)}
			byAccount[run.Account] = a
		}
		for i, b := range out.Buckets {
			be := b.Add(bucket)
			if be.After(end) {
				be = end
			}
			h := run.Allocated.GPUs * overlapSeconds(run.Start, run.End, b, be, now) / 3600
			a.Hours[i] += h
			a.Total += h
		}
	}
	for _, a := range byAccount {
		out.Series = append(out.Series, *a)
	}
	sort.Slice(out.Series, func(i, k int) bool {
		if out.Series[i].Total != out.Series[k].Total {
			return out.Series[i].Total > out.Series[k].Total
		}
		return out.Series[i].Account < out.Series[k].Account
	})
	return out, nil
}

// overlapSeconds is how long [a, b) (b zero: still running) spends in [from, to) before now.
func overlapSeconds(a, b, from, to, now time.Time) float64 {
	if b.IsZero() || b.After(now) {
		b = now
	}
	lo, hi := max(a.Unix(), from.Unix()), min(b.Unix(), to.Unix())
	if hi <= lo {
		return 0
	}
	return float64(hi - lo)
}

// ShareRowJSON is a fair-share row on the wire: LevelFS is null where it is infinite
// (an association without usage), which JSON cannot carry.
type ShareRowJSON struct {
	accounting.ShareRow
	LevelFS *float64 `json:"level_fs"`
}

// Row turns the wire form back into the row.
func (r ShareRowJSON) Row() accounting.ShareRow {
	out := r.ShareRow
	out.LevelFS = math.Inf(1)
	if r.LevelFS != nil {
		out.LevelFS = *r.LevelFS
	}
	return out
}

// FairShare is sshare's tree.
type FairShare struct {
	Rows []ShareRowJSON `json:"rows"`
}

func (d *Dashboard) assocs(ctx context.Context) ([]accounting.ShareAssoc, error) {
	if d.cfg.Assocs == nil {
		return nil, nil
	}
	return d.cfg.Assocs(ctx)
}

func (d *Dashboard) fairShare(r *http.Request) (any, error) {
	q := r.URL.Query()
	assocs, err := d.assocs(r.Context())
	if err != nil {
		return nil, err
	}
	long, _ := strconv.ParseBool(q.Get("long"))
	rows, err := report.Sshare(r.Context(), d.cfg.Store, assocs, d.cfg.Usage,
		report.SshareQuery{Accounts: list(q, "accounts"), Users: list(q, "users"), Long: long}, d.cfg.Clock())
	if err != nil {
		return nil, err
	}
	rows = visibleShareRows(viewerOf(r.Context()), rows)
	out := FairShare{Rows: make([]ShareRowJSON, len(rows))}
	for i, row := range rows {
		out.Rows[i] = ShareRowJSON{ShareRow: row}
		if !math.IsInf(row.LevelFS, 0) && !math.IsNaN(row.LevelFS) {
			v := row.LevelFS
			out.Rows[i].LevelFS = &v
		}
	}
	return out, nil
}

// TopUsers is sreport user TopUsage over GPUs, with hours for the page.
type TopUsers struct {
	Rows []TopUser `json:"rows"`
}

// TopUser is one user's GPU time in the window.
type TopUser struct {
	User     string  `json:"user"`
	Accounts string  `json:"accounts"`
	GPUHours float64 `json:"gpu_hours"`
}

func (d *Dashboard) topUsers(r *http.Request) (any, error) {
	q := r.URL.Query()
	now := d.cfg.Clock()
	start, end, err := window(q, now)
	if err != nil {
		return nil, err
	}
	n, err := count(q, "count", 10)
	if err != nil {
		return nil, err
	}
	rows, err := d.assocUsage(r, report.TopUsage, report.SreportQuery{Start: start, End: end,
		TRES: []string{accounting.TRESGPU}, TopCount: max(n, 1), Cluster: d.cfg.Cluster}, now)
	if err != nil {
		return nil, err
	}
	out := TopUsers{Rows: []TopUser{}}
	for _, row := range rows {
		out.Rows = append(out.Rows, TopUser{User: row.User, Accounts: row.Account, GPUHours: row.Used / 3600})
	}
	return out, nil
}

// Jobs is sacct's answer: the matching jobs by id (the latest Limit when a limit is
// given) and how many matched.
type Jobs struct {
	Jobs  []accounting.Job `json:"jobs"`
	Total int              `json:"total"`
}

func (d *Dashboard) jobs(r *http.Request) (any, error) {
	q := r.URL.Query()
	f, err := jobFilter(q)
	if err != nil {
		return nil, err
	}
	limit, err := count(q, "limit", 0)
	if err != nil {
		return nil, err
	}
	jobs, err := report.Sacct(r.Context(), d.cfg.Store, report.SacctQuery{Filter: f})
	if err != nil {
		return nil, err
	}
	jobs = visibleJobs(viewerOf(r.Context()), jobs)
	out := Jobs{Jobs: jobs, Total: len(jobs)}
	if limit > 0 && len(jobs) > limit {
		out.Jobs = jobs[len(jobs)-limit:]
	}
	if out.Jobs == nil {
		out.Jobs = []accounting.Job{}
	}
	return out, nil
}

// Sreport is one sreport report: the table as sreport prints it, and the structured
// rows (the --json form).
type Sreport struct {
	Table report.Table `json:"table"`
	Value any          `json:"value"`
}

// sreportKinds maps sreport's "<entity> <report>" (any case) to how the report is made.
var sreportKinds = map[string]string{
	"cluster utilization":              "Utilization",
	"cluster accountutilizationbyuser": "AccountUtilizationByUser",
	"cluster userutilizationbyaccount": "UserUtilizationByAccount",
	"user topusage":                    "TopUsage",
	"job sizesbyaccount":               "SizesByAccount",
	"cluster nodehealth":               "NodeHealth",
	"reservation utilization":          "ReservationUtilization",
}

func (d *Dashboard) sreport(r *http.Request) (any, error) {
	q := r.URL.Query()
	kind, ok := sreportKinds[strings.ToLower(strings.Join(strings.Fields(q.Get("report")), " "))]
	if !ok {
		return nil, badRequest("report", "unknown report %q (want cluster Utilization, cluster AccountUtilizationByUser, cluster UserUtilizationByAccount, user TopUsage, job SizesByAccount, cluster NodeHealth or reservation Utilization)", q.Get("report"))
	}
	now := d.cfg.Clock()
	sq, err := d.sreportQuery(r, now)
	if err != nil {
		return nil, err
	}
	ctx, s := r.Context(), d.cfg.Store
	switch kind {
	case "Utilization":
		rows, err := report.ClusterUtilization(ctx, s, sq, now)
		if err != nil {
			return nil, err
		}
		return Sreport{Table: report.UtilizationTable(rows, sq), Value: rows}, nil
	case "ReservationUtilization":
		rows, err := report.ReservationUtilization(ctx, s, sq, now)
		if err != nil {
			return nil, err
		}
		return Sreport{Table: report.ReservationTable(rows, sq), Value: rows}, nil
	case "NodeHealth":
		rows, err := report.NodeHealth(ctx, s, sq, now)
		if err != nil {
			return nil, err
		}
		return Sreport{Table: report.HealthTable(rows, sq), Value: rows}, nil
	case "SizesByAccount":
		sz, err := d.sizes(r, sq, now)
		if err != nil {
			return nil, err
		}
		return Sreport{Table: report.SizesTable(sz, sq), Value: sz}, nil
	}
	get := map[string]assocReport{
		"AccountUtilizationByUser": report.AccountUtilizationByUser,
		"UserUtilizationByAccount": report.UserUtilizationByAccount,
		"TopUsage":                 report.TopUsage,
	}[kind]
	rows, err := d.assocUsage(r, get, sq, now)
	if err != nil {
		return nil, err
	}
	t, err := report.AssocTable(kind, rows, sq)
	if err != nil {
		return nil, err
	}
	return Sreport{Table: t, Value: rows}, nil
}

// sreportQuery reads sreport's options: the window, -t, -T, Users=, Accounts=,
// TopCount= and Grouping=; the account tree comes from the fair-share associations.
func (d *Dashboard) sreportQuery(r *http.Request, now time.Time) (report.SreportQuery, error) {
	q := r.URL.Query()
	start, end, err := window(q, now)
	if err != nil {
		return report.SreportQuery{}, err
	}
	sq := report.SreportQuery{Start: start, End: end, Cluster: d.cfg.Cluster, Users: list(q, "users"), Accounts: list(q, "accounts")}
	if sq.Units, err = report.ParseTimeUnit(q.Get("t")); err != nil {
		return sq, badRequest("t", "%v", err)
	}
	if sq.TRES, err = accounting.ParseTRESList(q.Get("tres")); err != nil {
		return sq, badRequest("tres", "%v", err)
	}
	if sq.TopCount, err = count(q, "topcount", 10); err != nil {
		return sq, err
	}
	for _, g := range list(q, "grouping") {
		v, err := strconv.ParseFloat(g, 64)
		if err != nil || v <= 0 {
			return sq, badRequest("grouping", "grouping %q is not a positive number", g)
		}
		sq.Grouping = append(sq.Grouping, v)
	}
	assocs, err := d.assocs(r.Context())
	if err != nil {
		return sq, err
	}
	for _, a := range assocs {
		if a.User == "" && a.Parent != "" && a.Parent != "root" {
			if sq.Parents == nil {
				sq.Parents = map[string]string{}
			}
			sq.Parents[a.Account] = a.Parent
		}
	}
	return sq, nil
}
