package launchtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Delete ends the pods as their kubelets do when the pods are deleted
// or pass their activeDeadlineSeconds (the time limit): SIGTERM to each
// container's command at once, then, after grace (the pod's
// terminationGracePeriodSeconds, Slurm's KillWait), SIGKILL to every
// process still in the container. It returns once the SIGKILLs are sent
// (at once if every container ended first).
func Delete(nodes []*Node, grace time.Duration) {
	trees := make([]map[int]bool, len(nodes))
	for i, n := range nodes {
		trees[i] = descendants(n.Cmd.Process.Pid)
		_ = n.Cmd.Process.Signal(syscall.SIGTERM)
	}
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-n.exited():
			case <-time.After(grace):
			}
			// The container's end takes every process in it.
			for pid := range descendants(n.Cmd.Process.Pid) {
				trees[i][pid] = true
			}
			for pid := range trees[i] {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}()
	}
	wg.Wait()
}

// exited is closed when the container's command has exited (its
// process is a zombie or gone), without reaping it: Wait does.
func (n *Node) exited() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for st := state(n.Cmd.Process.Pid); st != "" && st != "Z"; st = state(n.Cmd.Process.Pid) {
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return ch
}

// state is a process's state letter from /proc ("Z" zombie), "" if gone.
func state(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// descendants are pid and every process below it now (tasks leave the
// launcher's process group, not its tree).
func descendants(pid int) map[int]bool {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	out := map[int]bool{pid: true}
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !out[c] {
				out[c] = true
				queue = append(queue, c)
			}
		}
	}
	return out
}
