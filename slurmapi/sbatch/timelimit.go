package sbatch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Unlimited is the time limit of "INFINITE" / "UNLIMITED".
const Unlimited time.Duration = -1

// ParseTimeLimit reads a Slurm time limit in any of its formats:
// "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds", and "INFINITE" or
// "UNLIMITED" (and zero, which asks for no limit too). Like Slurm, it counts whole minutes and rounds leftover
// seconds up ("1:30" is two minutes).
func ParseTimeLimit(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "INFINITE", "UNLIMITED", "-1":
		return Unlimited, nil
	case "":
		return 0, fmt.Errorf("empty time limit")
	}
	var days, hours, mins, secs int64
	dayPart, clock, hasDays := strings.Cut(s, "-")
	if !hasDays {
		clock = dayPart
	}
	fields := strings.Split(clock, ":")
	nums := make([]int64, len(fields))
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 || len(f) == 0 || len(f) > 9 {
			return 0, fmt.Errorf("invalid time limit %q (want [days-]hours:minutes:seconds or minutes)", s)
		}
		nums[i] = n
	}
	if hasDays {
		d, err := strconv.ParseInt(dayPart, 10, 64)
		if err != nil || d < 0 || len(dayPart) > 6 {
			return 0, fmt.Errorf("invalid time limit %q: bad day count", s)
		}
		days = d
		switch len(nums) { // after "days-": hours[:minutes[:seconds]]
		case 1:
			hours = nums[0]
		case 2:
			hours, mins = nums[0], nums[1]
		case 3:
			hours, mins, secs = nums[0], nums[1], nums[2]
		default:
			return 0, fmt.Errorf("invalid time limit %q", s)
		}
	} else {
		switch len(nums) {
		case 1:
			mins = nums[0]
		case 2:
			mins, secs = nums[0], nums[1]
		case 3:
			hours, mins, secs = nums[0], nums[1], nums[2]
		default:
			return 0, fmt.Errorf("invalid time limit %q", s)
		}
	}
	total := ((days*24+hours)*60+mins)*60 + secs
	if total == 0 {
		// sbatch(1): "A time limit of zero requests that no time limit be
		// imposed."
		return Unlimited, nil
	}
	minutes := (total + 59) / 60
	if minutes > MaxTimeLimitMinutes {
		return 0, fmt.Errorf("time limit %q is too long: at most %d minutes", s, MaxTimeLimitMinutes)
	}
	return time.Duration(minutes) * time.Minute, nil
}

// MaxTimeLimitMinutes is the longest finite time limit: a job's pods carry
// it as activeDeadlineSeconds, which Kubernetes caps at 2^31-1 seconds
// (about 68 years). Slurm's own field is 32-bit minutes with 0xffffffff
// meaning INFINITE, so every limit it would accept as finite and this one
// rules out is over 68 years anyway.
const MaxTimeLimitMinutes = (1<<31 - 1) / 60

// FormatTimeLimit writes a limit as Slurm shows it: [days-]hours:minutes:seconds.
func FormatTimeLimit(d time.Duration) string {
	if d == Unlimited {
		return "UNLIMITED"
	}
	secs := int64(d / time.Second)
	days, secs := secs/86400, secs%86400
	clock := fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs%3600/60, secs%60)
	if days > 0 {
		return fmt.Sprintf("%d-%s", days, clock)
	}
	return clock
}
