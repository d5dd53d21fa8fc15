package kube

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi"
)

// ShareTree reads the fair-share tree (the Queues c lists, as accounts under their
// parents, with their users) for the ledger's sshare, sreport's account tree and the
// fair-share metrics.
func ShareTree(c client.Reader) func(context.Context) ([]accounting.ShareAssoc, error) {
	return func(ctx context.Context) ([]accounting.ShareAssoc, error) {
		assocs, err := Associations(ctx, c)
		if err != nil {
			return nil, err
		}
		return slurmapi.ShareAssocs(assocs), nil
	}
}
