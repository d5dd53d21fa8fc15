package slurmapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tokens are HS256 JWTs with slurmrestd auth/jwt's claims: sun (the Slurm
// user name), iat and exp. They are written here with crypto/hmac because
// only this one algorithm is ever accepted; a general JWT library would
// bring algorithm negotiation we must then turn off.

// Claims are the claims Sluice reads and writes.
type Claims struct {
	User     string `json:"sun"`
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
}

// jwtHeader is the only header accepted.
const jwtHeader = `{"alg":"HS256","typ":"JWT"}`

var b64 = base64.RawURLEncoding

// MintToken signs a token for user valid for lifespan from now, like
// `scontrol token username=U lifespan=S`.
func MintToken(key []byte, user string, lifespan time.Duration) (string, error) {
	return mintAt(key, user, time.Now(), lifespan)
}

func mintAt(key []byte, user string, now time.Time, lifespan time.Duration) (string, error) {
	if len(key) < minKeyBytes {
		return "", fmt.Errorf("signing key has %d bytes, need at least %d", len(key), minKeyBytes)
	}
	if user == "" || lifespan <= 0 {
		return "", errors.New("token needs a user and a positive lifespan")
	}
	if err := ValidUserName(user); err != nil {
		return "", err
	}
	claims, err := json.Marshal(Claims{User: user, IssuedAt: now.Unix(), Expires: now.Add(lifespan).Unix()})
	if err != nil {
		return "", err
	}
	signing := b64.EncodeToString([]byte(jwtHeader)) + "." + b64.EncodeToString(claims)
	return signing + "." + b64.EncodeToString(sign(key, signing)), nil
}

func sign(key []byte, signing string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return mac.Sum(nil)
}

// VerifyToken checks the signature, algorithm and expiry of a token and
// returns its claims.
func VerifyToken(key []byte, token string, now time.Time) (Claims, error) {
	var c Claims
	head, rest, ok1 := strings.Cut(token, ".")
	body, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") {
		return c, errors.New("token is not a JWT (want header.claims.signature)")
	}
	gotSig, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(gotSig, sign(key, head+"."+body)) {
		return c, errors.New("token signature does not verify")
	}
	rawHead, err := b64.DecodeString(head)
	if err != nil {
		return c, errors.New("token header is not base64url")
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(rawHead, &h) != nil || h.Alg != "HS256" {
		return c, errors.New("token algorithm must be HS256")
	}
	rawBody, err := b64.DecodeString(body)
	if err != nil {
		return c, errors.New("token claims are not base64url")
	}
	if err := json.Unmarshal(rawBody, &c); err != nil {
		return c, errors.New("token claims are not a JSON object with sun, iat, exp")
	}
	switch {
	case c.User == "":
		return c, errors.New("token has no sun (user name) claim")
	case c.Expires == 0:
		return c, errors.New("token has no exp claim")
	case now.Unix() >= c.Expires:
		return c, fmt.Errorf("token expired at %s", time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))
	}
	if err := ValidUserName(c.User); err != nil {
		return c, fmt.Errorf("token's sun claim: %w", err)
	}
	return c, nil
}
