package launchtest

import (
	"io"
	"strings"
	"sync"
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
// closed first.
func (s *Screen) WaitFor(want string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !strings.Contains(s.text.String(), want) {
		if s.done {
			return false
		}
		s.cond.Wait()
	}
	return true
}

func (s *Screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}
