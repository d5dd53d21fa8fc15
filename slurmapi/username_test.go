package slurmapi

import (
	"strings"
	"testing"
	"time"
)

func TestValidUserName(t *testing.T) {
	cases := []struct {
		name, user, wantErr string
	}{
		{"posix name", "alice", ""},
		{"directory name with a domain", "alice@corp.example", ""},
		{"dots, dashes and digits", "svc.train-01", ""},
		{"empty", "", "empty"},
		{"a namespace's principal", "ns:vision", "ns:<namespace>"},
		{"a path", "../root", "':' or '/'"},
		{"a newline that would forge a second line in scontrol show job", "bob\nUserId=root", "white space"},
		{"a space", "alice smith", "white space"},
		{"too long", strings.Repeat("a", 256), "at most 255"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidUserName(tc.user)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ValidUserName(%q) = %v, want nil", tc.user, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ValidUserName(%q) = %v, want an error containing %q", tc.user, err, tc.wantErr)
			}
			if _, err := MintToken(testKey, tc.user, time.Hour); (err == nil) != (tc.wantErr == "") {
				t.Errorf("MintToken(%q): err %v, want refused=%v", tc.user, err, tc.wantErr != "")
			}
		})
	}
}
