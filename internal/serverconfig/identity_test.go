package serverconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/kube"
)

// TestUserMapSources: the server maps users from slurm.users, then the
// passwd and group files, then LDAP; the files are read as it starts, so a
// malformed line stops it, naming the line.
func TestUserMapSources(t *testing.T) {
	dir := t.TempDir()
	passwd, group := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	if err := os.WriteFile(passwd, []byte("alice:x:2001:2000::/home/alice:/bin/sh\nbob:x:2002:2000::/home/bob:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(group, []byte("nlp:x:3000:bob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Default().Slurm
	s.Users = map[string]SlurmUser{"alice": {UID: 1001, GID: 1000}}
	s.Identity = IdentityConfig{PasswdFile: passwd, GroupFile: group,
		LDAP: LDAPConfig{URL: "ldap://127.0.0.1:1", UserBase: "ou=people,dc=example,dc=org"}}
	if err := s.validateIdentity(); err != nil {
		t.Fatal(err)
	}
	m, err := s.UserMap()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Sources) != 2 || !strings.HasPrefix(m.Sources[0].String(), "passwd file") || !strings.HasPrefix(m.Sources[1].String(), "LDAP directory") {
		t.Fatalf("sources %v, want the files, then LDAP", m.Sources)
	}
	ctx := context.Background()
	if ids, err := m.Lookup(ctx, "alice"); err != nil || ids.UID != 1001 {
		t.Errorf("alice (slurm.users before the files): %+v, %v", ids, err)
	}
	if ids, err := m.Lookup(ctx, "bob"); err != nil || ids.UID != 2002 || len(ids.Groups) != 2 || ids.Home != "/home/bob" {
		t.Errorf("bob (the files): %+v, %v", ids, err)
	}
	// No one listens on port 1: carol is not refused as unknown, the directory is down.
	if _, err := m.Lookup(ctx, "carol"); !errors.Is(err, kube.ErrIdentityUnavailable) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("carol with the directory down: %v", err)
	}

	if err := os.WriteFile(passwd, []byte("alice:x:2001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserMap(); err == nil || !strings.Contains(err.Error(), passwd+" line 1") {
		t.Errorf("a malformed passwd file: %v, want an error naming %s line 1", err, passwd)
	}
}
