package slurmapi

import (
	"sync"
	"time"
)

// tokenCache remembers tokens whose signature already verified, so that a
// client sending the same token on every request (as scripts and the CLI
// do) costs a map lookup instead of an HMAC and two JSON decodes. Expiry
// is still checked on every use. It is bounded: when full it starts over.
type tokenCache struct {
	mu     sync.RWMutex
	claims map[string]Claims
}

const tokenCacheSize = 4096

func newTokenCache() *tokenCache { return &tokenCache{claims: map[string]Claims{}} }

func (c *tokenCache) get(token string) (Claims, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cl, ok := c.claims[token]
	return cl, ok
}

func (c *tokenCache) put(token string, cl Claims) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.claims) >= tokenCacheSize {
		c.claims = make(map[string]Claims, tokenCacheSize)
	}
	c.claims[token] = cl
}

// verify is VerifyToken with the cache in front.
func (c *tokenCache) verify(key []byte, token string, now time.Time) (Claims, error) {
	if c != nil {
		if cl, ok := c.get(token); ok && now.Unix() < cl.Expires {
			return cl, nil
		}
	}
	cl, err := VerifyToken(key, token, now)
	if err == nil && c != nil {
		c.put(token, cl)
	}
	return cl, err
}
