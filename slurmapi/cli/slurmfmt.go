package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// field renders one Slurm format field: "%.8j" means right-justified in 8
// columns, "%-8j" or "%8j" left-justified; both truncate to the width.
func field(v string, width int, right bool) string {
	v = oneLine(v)
	if width <= 0 {
		return v
	}
	if len(v) > width {
		v = v[:width]
	}
	if right {
		return fmt.Sprintf("%*s", width, v)
	}
	return fmt.Sprintf("%-*s", width, v)
}

// slurmDuration writes an elapsed time like squeue's TIME column: M:SS,
// H:MM:SS, D-HH:MM:SS.
func slurmDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	days, s := s/86400, s%86400
	h, s := s/3600, s%3600
	m, s := s/60, s%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// slurmTimeLimit writes a limit in minutes the way sinfo and squeue do.
func slurmTimeLimit(minutes int64, set bool) string {
	if !set {
		return "infinite"
	}
	return slurmDuration(time.Duration(minutes) * time.Minute)
}

// stateCodes are squeue's compact state names (%t).
var stateCodes = map[string]string{
	"PENDING": "PD", "RUNNING": "R", "SUSPENDED": "S", "COMPLETING": "CG", "COMPLETED": "CD",
	"CONFIGURING": "CF", "CANCELLED": "CA", "FAILED": "F", "TIMEOUT": "TO", "PREEMPTED": "PR",
	"NODE_FAIL": "NF", "BOOT_FAIL": "BF", "DEADLINE": "DL", "OUT_OF_MEMORY": "OOM", "REQUEUED": "RQ",
}

func stateCode(state string) string {
	if c, ok := stateCodes[state]; ok {
		return c
	}
	return state
}

// formatSpec is one parsed %-field of a --format string.
type formatSpec struct {
	literal string // text before the field
	letter  byte
	width   int
	right   bool
	auto    bool // %#P: as wide as the longest value
}

// parseFormat reads Slurm's printf-like --format ("%.18i %.9P %j").
func parseFormat(f string) ([]formatSpec, string, error) {
	var specs []formatSpec
	var lit strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			lit.WriteByte(f[i])
			continue
		}
		i++
		spec := formatSpec{literal: lit.String()}
		lit.Reset()
		if i < len(f) && f[i] == '.' {
			spec.right = true
			i++
		} else if i < len(f) && f[i] == '-' {
			i++
		}
		if i < len(f) && f[i] == '#' {
			spec.auto = true
			i++
		}
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			spec.width = spec.width*10 + int(f[i]-'0')
			i++
		}
		if i >= len(f) {
			return nil, "", fmt.Errorf("format %q ends inside a field", f)
		}
		spec.letter = f[i]
		specs = append(specs, spec)
	}
	return specs, lit.String(), nil
}

// lineBreaks are what a user's text (a multi-line --comment) may hold that would start
// another line, or another record, in a report others read.
var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// oneLine keeps a value on its line: a newline in a comment must not forge a second
// "UserId=" line in scontrol show job, or a row in squeue.
func oneLine(v string) string {
	if !strings.ContainsAny(v, "\n\r") {
		return v
	}
	return lineBreaks.Replace(v)
}

// formatFromFields turns a --Format list (sinfo -O, squeue -O) such as
// "partition,nodes:.5,statelong" into a %-format over the command's letters: each field
// 20 wide and left-justified unless given ":[.]width", as Slurm's --Format.
func formatFromFields(command, fields string, letters map[string]byte) (string, error) {
	var b strings.Builder
	for _, f := range strings.Split(fields, ",") {
		name, width, sized := strings.Cut(strings.TrimSpace(f), ":")
		letter, ok := letters[strings.ToLower(name)]
		if !ok {
			return "", UsageError{fmt.Sprintf("%s -O: unknown field %q", command, name)}
		}
		if !sized {
			width = "20"
		}
		if _, err := strconv.Atoi(strings.TrimPrefix(width, ".")); err != nil {
			return "", UsageError{fmt.Sprintf("%s -O: invalid width %q for %s", command, width, name)}
		}
		fmt.Fprintf(&b, "%%%s%c", width, letter)
	}
	return b.String(), nil
}
