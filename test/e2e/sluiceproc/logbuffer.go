package sluiceproc

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// servingRE finds the REST address in the server's "serving" log line
// (cmd/sluice/runtime.go), which it writes once its listener is open.
var servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)

// logBuffer collects a server's output, written by exec's copying goroutines
// while the test reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// servingAddr is the address of the "serving" line, or "" before it.
func (b *logBuffer) servingAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := servingRE.FindSubmatch(b.buf.Bytes()); m != nil {
		return string(m[1])
	}
	return ""
}

// tail is the last n lines.
func (b *logBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
