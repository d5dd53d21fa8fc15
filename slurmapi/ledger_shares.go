package slurmapi

import (
	"context"
	"math"
	"slices"

	"github.com/sluicehq/sluice/accounting"
)

// Shares is sshare from the ledger: Fair Tree over the backend's
// associations with the ledger's decayed usage.
func (b ledgerBackend) Shares(ctx context.Context, accounts, users []string) ([]Share, error) {
	assocs, err := b.Backend.Associations(ctx)
	if err != nil {
		return nil, err
	}
	return ledgerShares(ctx, b.ledger, assocs, accounts, users)
}

// ledgerShares computes the tree and keeps the rows sshare -A/-u would
// print: those of the named accounts and users (all when none are named).
func ledgerShares(ctx context.Context, l Ledger, assocs []Association, accounts, users []string) ([]Share, error) {
	rows, err := l.FairShare(ctx, ShareAssocs(assocs))
	if err != nil {
		return nil, err
	}
	var out []Share
	for _, r := range rows {
		if (len(accounts) > 0 && !slices.Contains(accounts, r.Account)) || (len(users) > 0 && !slices.Contains(users, r.User)) {
			continue
		}
		sh := Share{ID: len(out) + 1, Name: r.Account, Parent: r.Parent, Shares: int64(r.RawShares), SharesNorm: r.NormShares,
			RawUsage: int64(r.RawUsage), EffectiveUsage: r.EffectvUsage, FairshareFactor: r.FairShare, FairshareLevel: r.LevelFS}
		if r.IsUser() {
			sh.Name, sh.Parent, sh.User = r.User, r.Account, true
		}
		// An association without usage stands infinitely high; the REST
		// number cannot carry +Inf, so it is the largest float instead.
		if math.IsInf(sh.FairshareLevel, 1) {
			sh.FairshareLevel = math.MaxFloat64
		}
		out = append(out, sh)
	}
	return out, nil
}

// ShareAssocs is the fair-share tree of the associations: each account under
// its parent, each user under its account, with their shares. The REST
// shares endpoint and the ledger's sshare, sreport and metrics read the same
// tree, so they agree on it.
func ShareAssocs(assocs []Association) []accounting.ShareAssoc {
	out := make([]accounting.ShareAssoc, 0, len(assocs))
	for _, a := range assocs {
		shares := uint32(1) // Slurm's default for an association without shares
		if a.Shares > 0 {
			shares = uint32(min(a.Shares, math.MaxUint32))
		}
		sa := accounting.ShareAssoc{Account: a.Account, Parent: a.Parent, User: a.User, Shares: shares}
		if a.User != "" {
			sa.Parent = "" // a user's place is its account
		}
		out = append(out, sa)
	}
	return out
}
