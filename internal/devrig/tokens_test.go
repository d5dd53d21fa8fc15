package devrig

import (
	"testing"

	"github.com/sluicehq/sluice/internal/serverconfig"
)

// TestDevUsers: sluice dev maps every user it hands a token to, in name
// order, to uids of their own in one group.
func TestDevUsers(t *testing.T) {
	got := Users([]string{"alice", "bob", "carol"})
	want := map[string]serverconfig.SlurmUser{"alice": {UID: 1001, GID: 1000}, "bob": {UID: 1002, GID: 1000}, "carol": {UID: 1003, GID: 1000}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for u, ids := range want {
		if g := got[u]; g.UID != ids.UID || g.GID != ids.GID {
			t.Errorf("%s: %+v, want %+v", u, g, ids)
		}
	}
	cfg := serverconfig.Default()
	cfg.Slurm.Users = got
	if err := cfg.Validate(); err != nil {
		t.Errorf("the dev config: %v", err)
	}
}
