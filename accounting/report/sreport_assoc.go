package report

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// AssocUsage is TRES time charged to an account, or to a user within it,
// over a window. An account's row (User empty) totals its users; the "root"
// row totals the cluster.
type AssocUsage struct {
	Cluster string  `json:"cluster"`
	Account string  `json:"account"`
	User    string  `json:"user,omitempty"`
	TRES    string  `json:"tres"`
	Used    float64 `json:"used_seconds"`
	Total   float64 `json:"cluster_allocated_seconds"` // what Percent is taken of
}

// windowUsage is each user association's TRES time inside a window (not
// decayed: sreport reports what was used) and the cluster's total.
type windowUsage struct {
	byAssoc map[accounting.Assoc]accounting.TRESSeconds
	total   accounting.TRESSeconds
}

// usageInWindow checks the query, fills in its defaults and reads the window.
func usageInWindow(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) (SreportQuery, windowUsage, error) {
	q, err := q.normalize(now)
	if err != nil {
		return q, windowUsage{}, err
	}
	runs, err := s.Runs(ctx, q.Start, q.End)
	if err != nil {
		return q, windowUsage{}, err
	}
	w := windowUsage{byAssoc: map[accounting.Assoc]accounting.TRESSeconds{}, total: accounting.TRESSeconds{}}
	for _, r := range runs {
		secs := overlap(r.Start, r.End, q.Start, q.End, now)
		if secs == 0 {
			continue
		}
		key := accounting.Assoc{Account: r.Account, User: r.User}
		if w.byAssoc[key] == nil {
			w.byAssoc[key] = accounting.TRESSeconds{}
		}
		for _, n := range q.TRES {
			w.byAssoc[key][n] += r.Allocated.Amount(n) * secs
			w.total[n] += r.Allocated.Amount(n) * secs
		}
	}
	return q, w, nil
}

// rows makes one row per selected TRES for an account or user.
func (w windowUsage) rows(q SreportQuery, account, user string, t accounting.TRESSeconds) []AssocUsage {
	out := make([]AssocUsage, 0, len(q.TRES))
	for _, n := range q.TRES {
		out = append(out, AssocUsage{Cluster: q.Cluster, Account: account, User: user, TRES: n, Used: t[n], Total: w.total[n]})
	}
	return out
}

// groupBy sums the wanted associations' use under key(assoc), and lists
// the associations that went into each group.
func (w windowUsage) groupBy(q SreportQuery, key func(accounting.Assoc) string) (map[string]accounting.TRESSeconds, map[string][]accounting.Assoc) {
	sums := map[string]accounting.TRESSeconds{}
	members := map[string][]accounting.Assoc{}
	for a, t := range w.byAssoc {
		if !q.wants(a) {
			continue
		}
		k := key(a)
		if sums[k] == nil {
			sums[k] = accounting.TRESSeconds{}
		}
		for n, v := range t {
			sums[k][n] += v
		}
		members[k] = append(members[k], a)
	}
	for _, m := range members {
		sort.Slice(m, func(i, k int) bool { return m[i].User+"\x00"+m[i].Account < m[k].User+"\x00"+m[k].Account })
	}
	return sums, members
}

func (q SreportQuery) wants(a accounting.Assoc) bool {
	return (len(q.Accounts) == 0 || contains(q.Accounts, a.Account)) && (len(q.Users) == 0 || contains(q.Users, a.User))
}

// AccountUtilizationByUser is sreport cluster AccountUtilizationByUser:
// the cluster total (root), then each account's total followed by its users.
func AccountUtilizationByUser(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) ([]AssocUsage, error) {
	q, w, err := usageInWindow(ctx, s, q, now)
	if err != nil {
		return nil, err
	}
	direct, members := w.groupBy(q, func(a accounting.Assoc) string { return a.Account })
	// Each account's total includes its sub-accounts'.
	totals := map[string]accounting.TRESSeconds{}
	children := map[string][]string{}
	for acct, t := range direct {
		for up, hops := acct, 0; up != "root"; up, hops = parentOf(q.Parents, up), hops+1 {
			if hops > len(q.Parents) {
				return nil, fmt.Errorf("sreport: account %s is its own ancestor", acct)
			}
			if totals[up] == nil {
				totals[up] = accounting.TRESSeconds{}
				parent := parentOf(q.Parents, up)
				children[parent] = append(children[parent], up)
			}
			for n, v := range t {
				totals[up][n] += v
			}
		}
	}
	out := w.rows(q, "root", "", w.total)
	var walk func(parent string)
	walk = func(parent string) {
		kids := children[parent]
		sort.Strings(kids)
		for _, acct := range kids {
			out = append(out, w.rows(q, acct, "", totals[acct])...)
			for _, a := range members[acct] {
				out = append(out, w.rows(q, acct, a.User, w.byAssoc[a])...)
			}
			walk(acct)
		}
	}
	walk("root")
	return out, nil
}

func parentOf(parents map[string]string, account string) string {
	if p := parents[account]; p != "" {
		return p
	}
	return "root"
}

// UserUtilizationByAccount is sreport cluster UserUtilizationByAccount: one
// row per user and account, most used first.
func UserUtilizationByAccount(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) ([]AssocUsage, error) {
	q, w, err := usageInWindow(ctx, s, q, now)
	if err != nil {
		return nil, err
	}
	var out []AssocUsage
	for a, t := range w.byAssoc {
		if !q.wants(a) {
			continue
		}
		out = append(out, w.rows(q, a.Account, a.User, t)...)
	}
	sortByUse(out)
	return out, nil
}

// TopUsage is sreport user TopUsage: the TopCount users who used the most
// of the first selected TRES, each with the accounts they charged
// (comma-joined in Account).
func TopUsage(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) ([]AssocUsage, error) {
	q, w, err := usageInWindow(ctx, s, q, now)
	if err != nil {
		return nil, err
	}
	byUser, members := w.groupBy(q, func(a accounting.Assoc) string { return a.User })
	users := sortedKeys(byUser)
	first := q.TRES[0]
	sort.SliceStable(users, func(i, k int) bool { return byUser[users[i]][first] > byUser[users[k]][first] })
	if len(users) > q.TopCount {
		users = users[:q.TopCount]
	}
	var out []AssocUsage
	for _, u := range users {
		var accts []string
		for _, a := range members[u] {
			accts = append(accts, a.Account)
		}
		out = append(out, w.rows(q, strings.Join(accts, ","), u, byUser[u])...)
	}
	return out, nil
}

func sortByUse(rows []AssocUsage) {
	sort.SliceStable(rows, func(i, k int) bool {
		a, b := rows[i], rows[k]
		if a.Used != b.Used {
			return a.Used > b.Used
		}
		if a.User != b.User {
			return a.User < b.User
		}
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		return a.TRES < b.TRES
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// AssocTable lays out AccountUtilizationByUser, UserUtilizationByAccount or
// TopUsage rows with sreport's columns (Proper Name is left out: the ledger
// has logins, not real names).
func AssocTable(kind string, rows []AssocUsage, q SreportQuery) (Table, error) {
	q, _ = q.normalize(time.Now()) // defaults only
	used := Column{"Used", 10}
	var title string
	var cols []Column
	var cells func(r AssocUsage) []string
	switch kind {
	case "AccountUtilizationByUser":
		title = "Cluster/Account/User Utilization"
		cols = []Column{{"Cluster", 9}, {"Account", 15}, {"Login", 9}, {"TRES Name", 14}, used}
		cells = func(r AssocUsage) []string { return []string{r.Cluster, r.Account, r.User, r.TRES} }
	case "UserUtilizationByAccount":
		title = "Cluster/User/Account Utilization"
		cols = []Column{{"Cluster", 9}, {"Login", 9}, {"Account", 15}, {"TRES Name", 14}, used}
		cells = func(r AssocUsage) []string { return []string{r.Cluster, r.User, r.Account, r.TRES} }
	case "TopUsage":
		title = fmt.Sprintf("Top %d Users", q.TopCount)
		cols = []Column{{"Cluster", 9}, {"Login", 9}, {"Account", 15}, {"TRES Name", 14}, used}
		cells = func(r AssocUsage) []string { return []string{r.Cluster, r.User, r.Account, r.TRES} }
	default:
		return Table{}, fmt.Errorf("unknown sreport association report %q", kind)
	}
	t := Table{Title: q.banner(title), Columns: cols}
	for _, r := range rows {
		t.Rows = append(t.Rows, append(cells(r), formatTime(r.Used, r.Total, q.Units)))
	}
	return t, nil
}
