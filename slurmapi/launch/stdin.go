package launch

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
)

// srun's stdin goes to task 0, as srun's default --input does: a local
// task 0 reads it directly; a task 0 on another node gets it in chunks
// through that node's launcher (pathStdin), then its end.

// stdinChunk is a piece of srun's stdin for a step's task 0, or its end.
type stdinChunk struct {
	Step  int    `json:"step"`
	Data  []byte `json:"data,omitempty"`
	EOF   bool   `json:"eof,omitempty"`
	Nonce string `json:"nonce"` // the same bytes twice are not a replay
}

// pumpStdin sends srun's stdin to node's launcher until its end (or the
// step's: ctx).
func (r *stepRun) pumpStdin(ctx context.Context, node int) {
	if r.stdin == nil {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.stdin.Read(buf)
		if n > 0 {
			if r.peers.call(ctx, node, pathStdin, stdinChunk{Step: r.step, Data: buf[:n], Nonce: nonce()}) != nil {
				return // task 0 ended (or its node is gone): nobody reads more
			}
		}
		if err != nil {
			_ = r.peers.call(ctx, node, pathStdin, stdinChunk{Step: r.step, EOF: true, Nonce: nonce()})
			return
		}
	}
}

// stdinPipe makes the pipe a launched step's task 0 reads, kept under the
// step's id for pathStdin; the caller closes the read end once the task
// has started.
func (s *server) stdinPipe(step int) (*os.File, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.stdins[step] = wr
	s.mu.Unlock()
	return rd, nil
}

// closeStdin closes a step's task 0 input, if still open.
func (s *server) closeStdin(step int) {
	s.mu.Lock()
	wr := s.stdins[step]
	delete(s.stdins, step)
	s.mu.Unlock()
	if wr != nil {
		wr.Close()
	}
}

// stdin writes a chunk of srun's stdin to the step's task 0.
func (s *server) stdin(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var c stdinChunk
	if err := json.Unmarshal(b, &c); err != nil {
		http.Error(w, "launcher: bad input chunk", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	wr := s.stdins[c.Step]
	s.mu.Unlock()
	if wr == nil {
		http.Error(w, "launcher: step's task 0 takes no input here", http.StatusNotFound)
		return
	}
	if len(c.Data) > 0 {
		// A task that does not read its input holds srun back, as a full
		// pipe would; one that ended refuses it (EPIPE).
		if _, err := wr.Write(c.Data); err != nil {
			s.closeStdin(c.Step)
			http.Error(w, "launcher: task 0's input: "+err.Error(), http.StatusGone)
			return
		}
	}
	if c.EOF {
		s.closeStdin(c.Step)
	}
	w.WriteHeader(http.StatusNoContent)
}
