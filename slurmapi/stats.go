package slurmapi

import (
	"sort"
	"sync"
	"time"
)

// rpcStats counts requests per endpoint and per user for sdiag's
// rpcs_by_message_type and rpcs_by_user, as slurmctld counts its RPCs.
type rpcStats struct {
	mu     sync.Mutex
	byType map[string]*rpcCount
	byUser map[string]*rpcCount
}

type rpcCount struct {
	count int64
	total time.Duration
}

func newRPCStats() *rpcStats {
	return &rpcStats{byType: map[string]*rpcCount{}, byUser: map[string]*rpcCount{}}
}

func (s *rpcStats) record(rpc, user string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(m map[string]*rpcCount, k string) {
		c := m[k]
		if c == nil {
			c = &rpcCount{}
			m[k] = c
		}
		c.count++
		c.total += d
	}
	add(s.byType, rpc)
	if user != "" {
		add(s.byUser, user)
	}
}

// rpcRow is one counted endpoint or user.
type rpcRow struct {
	name  string
	count int64
	total time.Duration
}

func (s *rpcStats) snapshot() (types, users []rpcRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := func(m map[string]*rpcCount) []rpcRow {
		out := make([]rpcRow, 0, len(m))
		for k, c := range m {
			out = append(out, rpcRow{k, c.count, c.total})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return out
	}
	return rows(s.byType), rows(s.byUser)
}
