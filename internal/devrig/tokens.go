package devrig

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

	"github.com/sluicehq/sluice/internal/serverconfig"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// devTokenLifespan is long enough for a working day on the rig.
const devTokenLifespan = 24 * time.Hour

// Identities of the users sluice dev hands tokens to: each their own uid
// from devFirstUID on, in name order, all in one group, so their jobs'
// files on the real nodes' shared directory are each their own.
const (
	devFirstUID = 1001
	devGroupID  = 1000
)

// QueueUsers are the users named on the rig's Queues, by name, with the
// accounts (queues) each is in.
func QueueUsers(ctx context.Context, cfg *rest.Config) ([]string, map[string][]string, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	var queues v1alpha1.QueueList
	if err := c.List(ctx, &queues); err != nil {
		return nil, nil, fmt.Errorf("listing queues: %w", err)
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
	return users, accounts, nil
}

// Users maps users, in order, to uids devFirstUID, devFirstUID+1, ...
// in group devGroupID: sluice dev refuses users it maps to no one, as a
// fresh install does.
func Users(users []string) map[string]serverconfig.SlurmUser {
	m := make(map[string]serverconfig.SlurmUser, len(users))
	for i, u := range users {
		m[u] = serverconfig.SlurmUser{UID: int64(devFirstUID + i), GID: devGroupID}
	}
	return m
}

// PrintUserTokens mints a token for each of users (named on a Queue, with
// accounts; mapped to ids), so a newcomer can `export SLURM_JWT=...` and
// submit at once. It returns the first user and token, for the dashboard link.
func PrintUserTokens(w io.Writer, users []string, accounts map[string][]string, ids map[string]serverconfig.SlurmUser, keyFile string) (firstUser, firstToken string, err error) {
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		return "", "", err
	}
	for _, u := range users {
		tok, err := slurmapi.MintToken(key, u, devTokenLifespan)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(w, "  # %s (accounts: %s; uid %d)\n  export SLURM_JWT=%s\n", u, strings.Join(accounts[u], ","), ids[u].UID, tok)
		if firstToken == "" {
			firstUser, firstToken = u, tok
		}
	}
	// root administers every site, as in Slurm: drains and resumes nodes, sacctmgr, scontrol create.
	admin, err := slurmapi.MintToken(key, "root", devTokenLifespan)
	if err != nil {
		return "", "", err
	}
	fmt.Fprintf(w, "  # root (administrator: scontrol update NodeName=h100-0 State=DRAIN Reason=fan, sacctmgr)\n  export SLURM_JWT=%s\n", admin)
	// Anyone else's token authenticates, but sluice dev gives them no uid: their jobs are refused.
	fmt.Fprintf(w, "  # anyone else (no uid here: reads only): sluice token --state-dir %s --user NAME\n", strings.TrimSuffix(keyFile, "/jwt.key"))
	return firstUser, firstToken, nil
}
