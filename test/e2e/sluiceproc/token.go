package sluiceproc

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
)

// KeyAndToken creates a JWT signing key in dir, for the server's rest.jwtKeyFile, and
// mints a token for user with it, valid for an hour.
func KeyAndToken(t testing.TB, dir, user string) (keyFile, token string) {
	t.Helper()
	keyFile = filepath.Join(dir, "jwt.key")
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	token, err = slurmapi.MintToken(key, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return keyFile, token
}
