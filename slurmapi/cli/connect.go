package cli

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// connect is how a client command starts: the REST client (the --token flag,
// else $SLURM_JWT and $SLUICE_URL) and a context that bounds how long the
// command waits for the server. The caller defers cancel.
func connect(token string, limit time.Duration) (*client.Client, context.Context, context.CancelFunc, error) {
	c, err := client.FromEnv(token)
	if err != nil {
		return nil, nil, func() {}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	return c, ctx, cancel, nil
}
