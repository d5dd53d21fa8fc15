package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// groupAlive reports whether a process other than a zombie is still in
// process group pgid. Zombies are dead and hold no ports; they only wait for
// their new parent (init) to reap them, which kill(-pgid, 0) cannot tell.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		state, group, ok := parseStat(stat)
		if ok && group == pgid && state != "Z" {
			return true
		}
	}
	return false
}

// parseStat extracts the state and process group from /proc/PID/stat:
// "pid (comm) state ppid pgrp ...", where comm may contain spaces and parens.
func parseStat(stat []byte) (state string, pgrp int, ok bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return "", 0, false
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 3 {
		return "", 0, false
	}
	pgrp, err := strconv.Atoi(fields[2])
	return fields[0], pgrp, err == nil
}

// processesMentioning returns the pids of processes whose command line contains
// s. The rig passes its state directory to every component, so this finds one
// even if it left its process group.
func processesMentioning(s string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // exited meanwhile, or not ours to read
		}
		if bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
