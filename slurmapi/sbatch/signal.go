package sbatch

import (
	"fmt"
	"strconv"
	"strings"
)

// Signal is --signal=[{R|B}:]<sig_num>[@sig_time]: within Before seconds
// of its time limit the job gets signal Num, in every task of its steps
// or, with Batch (B:), in its batch shell only. Reservation (R:) lets a
// job overlap a reservation with MaxStartDelay in Slurm; Sluice has no such
// reservations (scontrol create refuses MaxStartDelay), so it changes
// nothing.
type Signal struct {
	Num         int
	Before      int // seconds before the time limit; Slurm's default 60
	Batch       bool
	Reservation bool
}

// DefaultSignalTime is sig_time when --signal names none, as in Slurm.
const DefaultSignalTime = 60

// MaxSignalTime is the largest sig_time Slurm takes (a uint16).
const MaxSignalTime = 0xffff

// ParseSignal reads --signal's value as sbatch and srun do.
func ParseSignal(v string) (Signal, error) {
	s := Signal{Before: DefaultSignalTime}
	rest := strings.TrimSpace(v)
	if flags, after, ok := strings.Cut(rest, ":"); ok {
		for _, f := range flags {
			switch f {
			case 'B', 'b':
				s.Batch = true
			case 'R', 'r':
				s.Reservation = true
			default:
				return Signal{}, fmt.Errorf("--signal=%s: invalid flag %q before ':' (want R, B or both)", v, f)
			}
		}
		if flags == "" {
			return Signal{}, fmt.Errorf("--signal=%s: no flag before ':' (want R, B or both)", v)
		}
		rest = after
	}
	sig, at, hasTime := strings.Cut(rest, "@")
	n, err := SignalNumber(sig)
	if err != nil {
		return Signal{}, fmt.Errorf("--signal=%s: %v", v, err)
	}
	s.Num = n
	if hasTime {
		t, err := strconv.Atoi(at)
		if err != nil || t < 0 || t > MaxSignalTime {
			return Signal{}, fmt.Errorf("--signal=%s: sig_time %q must be 0-%d seconds", v, at, MaxSignalTime)
		}
		s.Before = t
	}
	return s, nil
}

// String is s as --signal takes it, flags and time always written.
func (s Signal) String() string {
	flags := ""
	if s.Reservation {
		flags += "R"
	}
	if s.Batch {
		flags += "B"
	}
	if flags != "" {
		flags += ":"
	}
	return fmt.Sprintf("%s%d@%d", flags, s.Num, s.Before)
}

// signalNumbers are the names a signal may be given by (Linux numbers),
// with or without SIG, in any case.
var signalNumbers = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "USR1": 10,
	"USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15, "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20,
	"TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28}

// SignalNumber reads a signal given by number (1-64) or name ("USR1",
// "SIGUSR1").
func SignalNumber(v string) (int, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal %d is not 1-64", n)
		}
		return n, nil
	}
	if n, ok := signalNumbers[strings.TrimPrefix(strings.ToUpper(v), "SIG")]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("unknown signal %q", v)
}
