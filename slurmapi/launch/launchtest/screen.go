package launchtest

import (
	"io"
	"strings"
	"sync"
	"time"
)

// Screen collects what a terminal shows (the controlling side of a pty).
type Screen struct {
	mu   sync.Mutex
	cond *sync.Cond
	text strings.Builder
	done bool
}

// Watch reads r until it ends.
func Watch(r io.Reader) *Screen {
	s := &Screen{}
	s.cond = sync.NewCond(&s.mu)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			s.mu.Lock()
			s.text.Write(buf[:n])
			s.done = err != nil
			s.cond.Broadcast()
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// WaitFor blocks until the screen shows want; false if the terminal
// closed first or screenPatience passed (a test fails, never hangs).
func (s *Screen) WaitFor(want string) bool {
	expired := false
	timer := time.AfterFunc(screenPatience, func() {
		s.mu.Lock()
		expired = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !strings.Contains(s.text.String(), want) {
		if s.done || expired {
			return false
		}
		s.cond.Wait()
	}
	return true
}

// screenPatience is how long WaitFor waits for a line: far longer than
// a loaded machine takes to echo one.
const screenPatience = time.Minute

func (s *Screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}
