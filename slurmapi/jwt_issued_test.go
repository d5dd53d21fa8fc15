package slurmapi

import (
	"bytes"
	"testing"
	"time"
)

// Tokens this server signed are recognised, expired ones too; another
// key's token and JWT-shaped strings are not.
func TestIssuedToken(t *testing.T) {
	live, err := MintToken(testKey, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := mintAt(testKey, "alice", time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := MintToken(bytes.Repeat([]byte("o"), 32), "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{live, true}, {" " + live + "\n", true}, {expired, true},
		{other, false}, {"eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJhIn0.c2ln", false},
		{"a.b", false}, {"", false}, {live + ".x", false},
	} {
		if got := IssuedToken(testKey, tc.value); got != tc.want {
			t.Errorf("IssuedToken(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
	if IssuedToken(nil, live) {
		t.Error("no key recognises a token")
	}
}
