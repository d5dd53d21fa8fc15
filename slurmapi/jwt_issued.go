package slurmapi

import (
	"crypto/hmac"
	"strings"
)

// IssuedToken reports whether value is a token signed with key: one this
// server issued (or a server sharing its key), expired or not. A submitted
// environment is cleared of such values before it is stored: a live token
// lets whoever reads it act as its user, and whether one has expired is no
// reason to keep a credential. A value that merely looks like a JWT but
// does not verify is the user's own and is kept.
func IssuedToken(key []byte, value string) bool {
	if len(key) == 0 {
		return false
	}
	value = strings.TrimSpace(value)
	head, rest, ok1 := strings.Cut(value, ".")
	body, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") {
		return false
	}
	got, err := b64.DecodeString(sig)
	return err == nil && hmac.Equal(got, sign(key, head+"."+body))
}
