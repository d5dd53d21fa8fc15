// Package servermem holds `sluice server`'s memory to its container and measures it: the
// Go runtime's soft limit from the container's (limit.go), and the heap and API request
// profiles the scale benchmark reads (profile.go).
package servermem

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitEnv is the container's memory limit in bytes, which the chart passes down
// (a resourceFieldRef on limits.memory gives a plain byte count). Without a soft limit the
// Go collector lets the heap grow to twice what is live before it collects, whatever the
// container may hold, so a server whose live heap is under half its limit can still be
// killed for memory; with one, it collects harder as the heap nears the limit instead.
const memoryLimitEnv = "SLUICE_MEMORY_LIMIT"

// memoryLimitShare is the part of the container's limit the Go runtime is held to; the rest
// is for what it does not count (the kernel's buffers for the ledger's files, thread stacks
// outside Go).
const memoryLimitShare = 0.9

// ApplyLimit sets the Go runtime's soft memory limit from memoryLimitEnv, unless
// GOMEMLIMIT is set (the runtime has read it already: an operator's own choice wins). It
// returns the limit set, 0 when none.
func ApplyLimit(log *slog.Logger) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	raw := strings.TrimSpace(os.Getenv(memoryLimitEnv))
	if raw == "" {
		return 0
	}
	limit, ok := softLimit(raw)
	if !ok {
		log.Warn("ignoring "+memoryLimitEnv+": not a byte count", "value", raw)
		return 0
	}
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set from the container's", "containerBytes", raw, "limitBytes", limit)
	return limit
}

// softLimit is memoryLimitShare of a container limit written as a plain byte count.
func softLimit(raw string) (int64, bool) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int64(float64(n) * memoryLimitShare), true
}
