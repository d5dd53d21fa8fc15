package accounting

import (
	"context"
	"time"
)

// Ledger is a Store with the decay its usage is read with: what the REST
// API's slurmdb jobs and shares endpoints read (slurmapi.WithLedger).
type Ledger struct {
	Store
	Usage UsageConfig
	// Clock is nil for time.Now.
	Clock func() time.Time
}

// FairShare is sshare's tree: Fair Tree over assocs with the decayed usage
// recorded up to now.
func (l Ledger) FairShare(ctx context.Context, assocs []ShareAssoc) ([]ShareRow, error) {
	now := time.Now
	if l.Clock != nil {
		now = l.Clock
	}
	u, err := LoadUsage(ctx, l.Store, l.Usage, now())
	if err != nil {
		return nil, err
	}
	return FairTree(assocs, u)
}
