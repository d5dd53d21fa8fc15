package launch

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// labeler writes tasks' output to one stream; with -l each line starts
// with its task id ("0: "), padded to the widest id as srun pads it, and
// lines of different tasks never interleave mid-line.
type labeler struct {
	mu      sync.Mutex
	w       io.Writer
	label   bool
	width   int
	partial map[int][]byte
}

func newLabeler(w io.Writer, label bool, tasks int) *labeler {
	return &labeler{w: w, label: label, width: len(fmt.Sprint(max(tasks-1, 0))), partial: map[int][]byte{}}
}

func (l *labeler) write(task int, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.label {
		_, _ = l.w.Write(p)
		return
	}
	buf := append(l.partial[task], p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(l.w, "%*d: %s", l.width, task, buf[:i+1])
		buf = buf[i+1:]
	}
	l.partial[task] = buf
}

// flush writes the tasks' unfinished last lines.
func (l *labeler) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for task, buf := range l.partial {
		if len(buf) > 0 {
			fmt.Fprintf(l.w, "%*d: %s\n", l.width, task, buf)
		}
	}
	l.partial = map[int][]byte{}
}
