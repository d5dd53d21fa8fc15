package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// usageProbe returns CPU seconds since the probe was made and the peak RSS in MiB.
type usageProbe func() (cpuSeconds, peakRSSMiB float64)

// selfUsage probes this process. It resets the kernel's peak-RSS mark first (clear_refs
// 5), so the peak is the scheduler's run, not whatever this process held before.
func selfUsage() usageProbe {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	before := selfCPU()
	return func() (float64, float64) {
		return selfCPU() - before, statusMiB("/proc/self/status", "VmHWM:")
	}
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// processUsage probes a child process from its start.
func processUsage(pid int) usageProbe {
	proc := "/proc/" + strconv.Itoa(pid)
	return func() (float64, float64) {
		return procCPU(proc + "/stat"), statusMiB(proc+"/status", "VmHWM:")
	}
}

// procCPU is utime+stime from /proc/PID/stat, fields 14 and 15 counted from the pid.
func procCPU(path string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // the name may hold spaces
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

func statusMiB(path, field string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// loadAverage is the machine's 1-minute load average, as uptime shows it: the benchmark
// shares its cores, and a run's figures mean little without it.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
