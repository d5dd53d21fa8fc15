package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// devTokenLifespan is long enough for a working day on the rig.
const devTokenLifespan = 24 * time.Hour

// printUserTokens mints a token for every user named on a Queue, so a
// newcomer can `export SLURM_JWT=...` and submit at once. It returns the
// first user and token, for the dashboard link.
func printUserTokens(ctx context.Context, w io.Writer, cfg *rest.Config, keyFile string) (firstUser, firstToken string, err error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return "", "", err
	}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: scheme})
	if err != nil {
		return "", "", err
	}
	var queues v1alpha1.QueueList
	if err := c.List(ctx, &queues); err != nil {
		return "", "", fmt.Errorf("listing queues: %w", err)
	}
	accounts := map[string][]string{}
	for _, q := range queues.Items {
		for _, u := range q.Spec.Users {
			accounts[u] = append(accounts[u], q.Name)
		}
	}
	users := make([]string, 0, len(accounts))
	for u := range accounts {
		users = append(users, u)
	}
	sort.Strings(users)
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		return "", "", err
	}
	for _, u := range users {
		tok, err := slurmapi.MintToken(key, u, devTokenLifespan)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(w, "  # %s (accounts: %s)\n  export SLURM_JWT=%s\n", u, strings.Join(accounts[u], ","), tok)
		if firstToken == "" {
			firstUser, firstToken = u, tok
		}
	}
	fmt.Fprintf(w, "  # anyone else: sluice token --state-dir %s --user NAME\n", strings.TrimSuffix(keyFile, "/jwt.key"))
	return firstUser, firstToken, nil
}
