package slurmapi

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// RateLimit is a token bucket: Burst submissions at once, refilled at
// PerSecond. PerSecond <= 0 means no limit.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// SubmitLimits are the per-user limits on job submissions: Default for
// everyone, Users for named users (a pipeline's service user, say). The
// zero value limits nobody.
type SubmitLimits struct {
	Default RateLimit
	Users   map[string]RateLimit
}

// maxIdleBuckets bounds the limiter's memory: past it, buckets that have
// refilled completely (idle users) are dropped, which changes nothing for
// them.
const maxIdleBuckets = 4096

// submitLimiter holds one bucket per user who submitted recently. It is
// an in-memory lookup, so the check costs the submit path nothing that
// scales with the cluster.
type submitLimiter struct {
	limits  SubmitLimits
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newSubmitLimiter(l SubmitLimits) *submitLimiter {
	return &submitLimiter{limits: l, buckets: map[string]*bucket{}}
}

func (l *submitLimiter) limitOf(user string) RateLimit {
	if r, ok := l.limits.Users[user]; ok {
		return r
	}
	return l.limits.Default
}

// allow takes one token of user's bucket, or answers 429 with an errors[]
// entry saying when the next one is due.
func (l *submitLimiter) allow(user string, now time.Time) *Error {
	r := l.limitOf(user)
	if r.PerSecond <= 0 {
		return nil
	}
	burst := float64(max(r.Burst, 1))
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[user]
	if b == nil {
		if len(l.buckets) >= maxIdleBuckets {
			l.dropFull(now)
		}
		b = &bucket{tokens: burst, last: now}
		l.buckets[user] = b
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(burst, b.tokens+elapsed*r.PerSecond)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	wait := time.Duration((1 - b.tokens) / r.PerSecond * float64(time.Second))
	e := Errorf(http.StatusTooManyRequests, ErrRateLimited, "job/submit",
		"user %s is over the submission rate limit (%g per second, bursts of %d); retry in %s, or submit many tasks as one job array",
		user, r.PerSecond, int(burst), wait.Round(time.Millisecond))
	e.RetryAfter = wait
	return e
}

// dropFull forgets the buckets that are full by now.
func (l *submitLimiter) dropFull(now time.Time) {
	for user, b := range l.buckets {
		r := l.limitOf(user)
		if r.PerSecond <= 0 || b.tokens+now.Sub(b.last).Seconds()*r.PerSecond >= float64(max(r.Burst, 1)) {
			delete(l.buckets, user)
		}
	}
}
