package kube

import (
	"strings"
	"testing"
)

func TestUserMap(t *testing.T) {
	alice := UserIDs{UID: 1001, GID: 100}
	users := map[string]UserIDs{"alice": alice, "admin": {UID: 0, GID: 0}}
	tests := []struct {
		name    string
		m       UserMap
		user    string
		want    UserIDs
		mayRun  bool
		wantErr string
	}{
		{"mapped user runs as mapped", UserMap{Users: users}, "alice", alice, true, ""},
		{"a user mapped to root runs as root", UserMap{Users: users}, "admin", UserIDs{}, true, ""},
		{"unmapped user runs as nobody by default", UserMap{Users: users}, "bob", NobodyIDs, true, ""},
		{"unmapped user runs as the site's default", UserMap{Users: users, Unmapped: UnmappedRun, Default: &UserIDs{UID: 5000, GID: 5000}}, "bob", UserIDs{UID: 5000, GID: 5000}, true, ""},
		{"unmapped user refused", UserMap{Users: users, Unmapped: UnmappedRefuse}, "bob", UserIDs{}, false, `user "bob" has no uid`},
		{"mapped user runs where unmapped are refused", UserMap{Users: users, Unmapped: UnmappedRefuse}, "alice", alice, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.m.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tc.m.MayRun(tc.user); got != tc.mayRun {
				t.Errorf("MayRun(%s) = %v, want %v", tc.user, got, tc.mayRun)
			}
			got, err := tc.m.IDs(tc.user)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("IDs(%s) = %v, %v; want an error saying %q", tc.user, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("IDs(%s) = %v, %v; want %v", tc.user, got, err, tc.want)
			}
		})
	}
}

func TestUserMapValidate(t *testing.T) {
	tests := []struct {
		m       UserMap
		wantErr string
	}{
		{UserMap{Default: &UserIDs{UID: 0, GID: 5}}, "want a non-root uid"},
		{UserMap{Default: &UserIDs{UID: -1, GID: 5}}, "want a non-root uid"},
		{UserMap{Default: &UserIDs{UID: 5, GID: -1}}, "gid -1"},
		{UserMap{Unmapped: "allow"}, `unmapped users "allow": want "run" or "refuse"`},
	}
	for _, tc := range tests {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Validate(%+v) = %v, want an error saying %q", tc.m, err, tc.wantErr)
		}
	}
}
