package slurmapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestSubmitLimiter: a user gets Burst submissions at once, then one per
// 1/PerSecond; other users have buckets of their own, named users their
// own limits, and a zero rate limits nobody.
func TestSubmitLimiter(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	limits := SubmitLimits{
		Default: RateLimit{PerSecond: 2, Burst: 3},
		Users:   map[string]RateLimit{"pipeline": {PerSecond: 0}, "slow": {PerSecond: 0.5, Burst: 1}},
	}
	type try struct {
		user    string
		at      time.Duration // after t0
		allowed bool
	}
	tests := []struct {
		name  string
		tries []try
	}{
		{"burst then refused", []try{{"alice", 0, true}, {"alice", 0, true}, {"alice", 0, true}, {"alice", 0, false}}},
		{"refilled at the rate", []try{{"alice", 0, true}, {"alice", 0, true}, {"alice", 0, true}, {"alice", 400 * time.Millisecond, false}, {"alice", 500 * time.Millisecond, true}, {"alice", 500 * time.Millisecond, false}}},
		{"never above the burst after idling", []try{{"alice", 0, true}, {"alice", time.Hour, true}, {"alice", time.Hour, true}, {"alice", time.Hour, true}, {"alice", time.Hour, false}}},
		{"users do not share a bucket", []try{{"alice", 0, true}, {"alice", 0, true}, {"alice", 0, true}, {"bob", 0, true}, {"alice", 0, false}}},
		{"a user's own limit", []try{{"slow", 0, true}, {"slow", time.Second, false}, {"slow", 2 * time.Second, true}}},
		{"a user without a limit", []try{{"pipeline", 0, true}, {"pipeline", 0, true}, {"pipeline", 0, true}, {"pipeline", 0, true}, {"pipeline", 0, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newSubmitLimiter(limits)
			for i, tr := range tc.tries {
				e := l.allow(tr.user, t0.Add(tr.at))
				if (e == nil) != tr.allowed {
					t.Fatalf("try %d (%s at +%s): %v, want allowed=%v", i, tr.user, tr.at, e, tr.allowed)
				}
				if e != nil && (e.Status != http.StatusTooManyRequests || e.Number != ErrRateLimited || e.RetryAfter <= 0) {
					t.Errorf("try %d: %d %d retry %s, want 429 %d with a retry time", i, e.Status, e.Number, e.RetryAfter, ErrRateLimited)
				}
			}
		})
	}
	if e := newSubmitLimiter(SubmitLimits{}).allow("alice", t0); e != nil {
		t.Errorf("the zero limits refused: %v", e)
	}
}

// TestSubmitLimiterForgetsIdleUsers: past maxIdleBuckets users, those whose
// buckets have refilled are forgotten, so memory stays bounded.
func TestSubmitLimiterForgetsIdleUsers(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	l := newSubmitLimiter(SubmitLimits{Default: RateLimit{PerSecond: 10, Burst: 5}})
	for i := range maxIdleBuckets {
		l.allow("user"+strconv.Itoa(i), t0)
	}
	l.allow("busy", t0.Add(time.Minute))
	l.allow("late", t0.Add(time.Minute))
	if n := len(l.buckets); n != 2 {
		t.Errorf("%d buckets after every early user went idle, want 2 (busy, late)", n)
	}
}

// BenchmarkSubmitLimiter is the rate limit's cost on the submit path:
// 16 users submitting in parallel, as the submission benchmark's clients.
func BenchmarkSubmitLimiter(b *testing.B) {
	l := newSubmitLimiter(SubmitLimits{Default: RateLimit{PerSecond: 1e9, Burst: 1 << 30}})
	users := make([]string, 16)
	for i := range users {
		users[i] = "user" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if e := l.allow(users[i%len(users)], time.Now()); e != nil {
				b.Fatal(e)
			}
			i++
		}
	})
}
