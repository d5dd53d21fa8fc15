package slurmapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte("k"), 32)

func testAuth() *AuthConfig {
	return &AuthConfig{
		Key:          testKey,
		Operators:    []string{"slurm"},
		Admins:       []string{"boss"}, // root is one anyway
		Coordinators: map[string][]string{"carol": {"nlp"}},
		SlurmUser:    "slurmadm",
	}
}

func mustMint(t *testing.T, user string, life time.Duration) string {
	t.Helper()
	tok, err := MintToken(testKey, user, life)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAuthenticate(t *testing.T) {
	alice := mustMint(t, "alice", time.Hour)
	op := mustMint(t, "slurm", time.Hour)
	admin := mustMint(t, "root", time.Hour)
	coord := mustMint(t, "carol", time.Hour)
	expired, _ := mintAt(testKey, "alice", time.Now().Add(-2*time.Hour), time.Hour)
	otherKey, _ := MintToken(bytes.Repeat([]byte("x"), 32), "alice", time.Hour)
	parts := strings.Split(alice, ".")
	noneAlg := b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
	// Signed with the server's key (a key leaked to a script that mints its own
	// tokens, say), for the name manifest workloads of namespace vision carry.
	namespaceClaims := b64.EncodeToString([]byte(fmt.Sprintf(`{"sun":"ns:vision","iat":%d,"exp":%d}`, time.Now().Unix(), time.Now().Add(time.Hour).Unix())))
	signing := parts[0] + "." + namespaceClaims
	namespaceToken := signing + "." + b64.EncodeToString(sign(testKey, signing))
	cases := []struct {
		name     string
		headers  map[string]string
		wantUser string
		wantRole Role
		wantErr  string
	}{
		{"slurm header", map[string]string{"X-SLURM-USER-TOKEN": alice}, "alice", RoleUser, ""},
		{"slurm header with matching name", map[string]string{"X-SLURM-USER-TOKEN": alice, "X-SLURM-USER-NAME": "alice"}, "alice", RoleUser, ""},
		{"bearer", map[string]string{"Authorization": "Bearer " + alice}, "alice", RoleUser, ""},
		{"admin acts as bob with bob's rights", map[string]string{"X-SLURM-USER-TOKEN": admin, "X-SLURM-USER-NAME": "bob"}, "bob", RoleUser, ""},
		{"admin acts as an operator with the operator's rights", map[string]string{"X-SLURM-USER-TOKEN": admin, "X-SLURM-USER-NAME": "slurm"}, "slurm", RoleOperator, ""},
		{"operator may not act as another user", map[string]string{"X-SLURM-USER-TOKEN": op, "X-SLURM-USER-NAME": "bob"}, "", 0, "only administrators"},
		{"coordinator may not act as a user of its account", map[string]string{"X-SLURM-USER-TOKEN": coord, "X-SLURM-USER-NAME": "alice"}, "", 0, "only administrators"},
		{"operator role", map[string]string{"X-SLURM-USER-TOKEN": op}, "slurm", RoleOperator, ""},
		{"root is an administrator on every site", map[string]string{"X-SLURM-USER-TOKEN": mustMint(t, "root", time.Hour)}, "root", RoleAdmin, ""},
		{"SlurmUser is an administrator", map[string]string{"X-SLURM-USER-TOKEN": mustMint(t, "slurmadm", time.Hour)}, "slurmadm", RoleAdmin, ""},
		{"user impersonation refused", map[string]string{"X-SLURM-USER-TOKEN": alice, "X-SLURM-USER-NAME": "bob"}, "", 0, "does not match"},
		{"both at once", map[string]string{"X-SLURM-USER-TOKEN": alice, "Authorization": "Bearer " + alice}, "", 0, "both"},
		{"no token", nil, "", 0, "no token"},
		{"expired", map[string]string{"X-SLURM-USER-TOKEN": expired}, "", 0, "expired"},
		{"wrong key", map[string]string{"X-SLURM-USER-TOKEN": otherKey}, "", 0, "signature"},
		{"alg none", map[string]string{"X-SLURM-USER-TOKEN": noneAlg}, "", 0, "signature"},
		{"garbage", map[string]string{"X-SLURM-USER-TOKEN": "abc"}, "", 0, "not a JWT"},
		{"a token for a namespace's principal", map[string]string{"X-SLURM-USER-TOKEN": namespaceToken}, "", 0, "ns:<namespace>"},
		{"admin may not act as a namespace's principal", map[string]string{"X-SLURM-USER-TOKEN": admin, "X-SLURM-USER-NAME": "ns:vision"}, "", 0, "ns:<namespace>"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodGet, "/slurm/v0.0.45/ping/", nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		id, err := testAuth().Authenticate(r, time.Now())
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Description, tc.wantErr) || err.Status != http.StatusUnauthorized {
				t.Errorf("%s: got %v, want 401 containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if id.User != tc.wantUser || id.Role != tc.wantRole {
			t.Errorf("%s: got %s/%d, want %s/%d", tc.name, id.User, id.Role, tc.wantUser, tc.wantRole)
		}
	}
}

func TestJobAccessByRole(t *testing.T) {
	a := testAuth()
	cases := []struct {
		caller, owner, account string
		want                   bool
	}{
		{"alice", "alice", "nlp", true},
		{"alice", "bob", "nlp", false},
		{"carol", "bob", "nlp", true},
		{"carol", "bob", "vision", false},
		{"slurm", "bob", "vision", true},
		{"root", "bob", "vision", true},
	}
	for _, tc := range cases {
		if got := a.identity(tc.caller).CanAccessJob(tc.owner, tc.account); got != tc.want {
			t.Errorf("%s on %s's job in %s: got %v, want %v", tc.caller, tc.owner, tc.account, got, tc.want)
		}
	}
	if a.identity("slurm").CanAdminister() || !a.identity("root").CanAdminister() {
		t.Error("only admins may administer accounts")
	}
}

func TestMintRefusesWeakInput(t *testing.T) {
	if _, err := MintToken([]byte("short"), "alice", time.Hour); err == nil {
		t.Error("minted with a 5-byte key")
	}
	if _, err := MintToken(testKey, "", time.Hour); err == nil {
		t.Error("minted without a user")
	}
	if _, err := MintToken(testKey, "alice", 0); err == nil {
		t.Error("minted with no lifespan")
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "jwt_hs256.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || len(k1) < 32 {
		t.Errorf("created key mode %v len %d, want 0600 and >= 32", st.Mode().Perm(), len(k1))
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Errorf("second load gave a different key (%v)", err)
	}
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte("abc"), 0o600)
	if _, err := LoadOrCreateKey(short); err == nil {
		t.Error("accepted a 3-byte key")
	}
}

func TestCachedTokenStillExpires(t *testing.T) {
	a := testAuth()
	a.verified = newTokenCache()
	now := time.Now()
	tok, _ := mintAt(testKey, "alice", now, time.Minute)
	r := httptest.NewRequest(http.MethodGet, "/slurm/v0.0.45/ping/", nil)
	r.Header.Set("X-SLURM-USER-TOKEN", tok)
	if _, err := a.Authenticate(r, now); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(r, now.Add(2*time.Minute)); err == nil {
		t.Error("a cached token was accepted after it expired")
	}
	forged := tok[:len(tok)-2] + "xx"
	r.Header.Set("X-SLURM-USER-TOKEN", forged)
	if _, err := a.Authenticate(r, now); err == nil {
		t.Error("a token differing from a cached one was accepted")
	}
}

// Who may read a job: everyone, as in Slurm without PrivateData; with
// PrivateData=jobs only those who may change it. Changing never widens.
func TestJobVisibilityFollowsPrivateData(t *testing.T) {
	cases := []struct {
		caller, owner, account string
		private, want          bool
	}{
		{"alice", "bob", "vision", false, true},
		{"alice", "bob", "vision", true, false},
		{"alice", "alice", "nlp", true, true},
		{"carol", "bob", "nlp", true, true},
		{"carol", "bob", "vision", true, false},
		{"slurm", "bob", "vision", true, true},
	}
	for _, tc := range cases {
		a := testAuth()
		a.PrivateJobs = tc.private
		id := a.identity(tc.caller)
		if got := id.CanSeeJob(tc.owner, tc.account); got != tc.want {
			t.Errorf("%s reading %s's job in %s (private %v): got %v, want %v", tc.caller, tc.owner, tc.account, tc.private, got, tc.want)
		}
		if id.CanAccessJob(tc.owner, tc.account) && !id.CanSeeJob(tc.owner, tc.account) {
			t.Errorf("%s may change %s's job but not read it", tc.caller, tc.owner)
		}
	}
	a := testAuth()
	if !a.identity("alice").CanSeeJob("bob", "vision") || a.identity("alice").CanAccessJob("bob", "vision") {
		t.Error("without PrivateData alice should read bob's job and still not change it")
	}
}
