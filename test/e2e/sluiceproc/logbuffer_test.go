package sluiceproc

import "testing"

func TestLogBufferServingAddr(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{
		{"nothing logged yet", "", ""},
		{"starting, not listening", "time=2026-12-03T02:00:00Z level=INFO msg=\"leader election\" lease=sluice\n", ""},
		{"listening", "level=INFO msg=starting\ntime=2026-12-03T02:00:01Z level=INFO msg=serving addr=127.0.0.1:41234 schedulerName=sluice\n", "127.0.0.1:41234"},
		{"line still being written", "level=INFO msg=serving addr=[::1]:8080", "[::1]:8080"},
		{"another message naming serving", "level=INFO msg=\"serving webhook\" addr=127.0.0.1:9443\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b logBuffer
			if _, err := b.Write([]byte(tc.log)); err != nil {
				t.Fatal(err)
			}
			if got := b.servingAddr(); got != tc.want {
				t.Errorf("servingAddr() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLogBufferTail(t *testing.T) {
	tests := []struct {
		name, log string
		n         int
		want      string
	}{
		{"fewer lines than asked", "a\nb\n", 5, "a\nb"},
		{"exactly as many", "a\nb\nc\n", 3, "a\nb\nc"},
		{"the last ones only", "a\nb\nc\nd\n", 2, "c\nd"},
		{"no trailing newline", "a\nb\nc", 1, "c"},
		{"empty log", "", 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b logBuffer
			if _, err := b.Write([]byte(tc.log)); err != nil {
				t.Fatal(err)
			}
			if got := b.tail(tc.n); got != tc.want {
				t.Errorf("tail(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
