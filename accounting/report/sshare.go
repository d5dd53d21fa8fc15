package report

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// SshareQuery selects associations as sshare -A / -u do; Long adds
// NormUsage and LevelFS (-l).
type SshareQuery struct {
	Accounts []string
	Users    []string
	Long     bool
}

// Sshare computes the fair-share tree from the ledger as of now and keeps
// the rows the query asks for (with their ancestors, as sshare prints them).
func Sshare(ctx context.Context, s accounting.Store, assocs []accounting.ShareAssoc, cfg accounting.UsageConfig, q SshareQuery, now time.Time) ([]accounting.ShareRow, error) {
	u, err := accounting.LoadUsage(ctx, s, cfg, now)
	if err != nil {
		return nil, err
	}
	rows, err := accounting.FairTree(assocs, u)
	if err != nil {
		return nil, err
	}
	return filterShares(rows, q), nil
}

func filterShares(rows []accounting.ShareRow, q SshareQuery) []accounting.ShareRow {
	if len(q.Accounts) == 0 && len(q.Users) == 0 {
		return rows
	}
	keep := map[int]bool{}
	parentIdx := map[string]int{} // account -> row index, for walking up
	for i, r := range rows {
		if !r.IsUser() {
			parentIdx[r.Account] = i
		}
	}
	for i, r := range rows {
		match := (len(q.Accounts) == 0 || contains(q.Accounts, r.Account)) &&
			(len(q.Users) == 0 || (r.IsUser() && contains(q.Users, r.User)))
		if !match {
			continue
		}
		keep[i] = true
		for up := r.Parent; up != ""; up = rows[parentIdx[up]].Parent {
			keep[parentIdx[up]] = true
		}
	}
	var out []accounting.ShareRow
	for i, r := range rows {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// SshareTable lays rows out with Slurm's Fair Tree columns: Account, User,
// RawShares, NormShares, RawUsage, EffectvUsage, FairShare, and with long
// also NormUsage and LevelFS. The account name is indented one space per
// level, as sshare does.
func SshareTable(rows []accounting.ShareRow, long bool) Table {
	cols := []Column{{"Account", -20}, {"User", 10}, {"RawShares", 10}, {"NormShares", 11}, {"RawUsage", 11}}
	if long {
		cols = append(cols, Column{"NormUsage", 11})
	}
	cols = append(cols, Column{"EffectvUsage", 13}, Column{"FairShare", 10})
	if long {
		cols = append(cols, Column{"LevelFS", 10})
	}
	t := Table{Columns: cols}
	for _, r := range rows {
		raw := strconv.FormatUint(uint64(r.RawShares), 10)
		fs := ""
		if r.IsUser() {
			fs = float6(r.FairShare)
		}
		if r.Depth == 0 {
			raw = ""
		}
		row := []string{strings.Repeat(" ", r.Depth) + r.Account, r.User, raw, float6(r.NormShares),
			strconv.FormatUint(uint64(r.RawUsage), 10)}
		if long {
			row = append(row, float6(r.NormUsage))
		}
		row = append(row, float6(r.EffectvUsage), fs)
		if long {
			lfs := ""
			if r.Depth > 0 {
				lfs = float6(r.LevelFS)
			}
			row = append(row, lfs)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// float6 prints like C's %f, which Slurm uses: six decimals, "inf".
func float6(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}
