package sbatch

import (
	"strconv"
	"strings"
)

// noArrayTask is what %a gives outside an array: Slurm's NO_VAL - 1.
const noArrayTask = 4294967294

// FilenameFields are the values sbatch's --output/--error patterns name.
type FilenameFields struct {
	JobID       uint32 // %j
	Name        string // %x
	User        string // %u
	ArrayJobID  uint32 // %A; 0 outside an array, where %A is the job id
	ArrayTaskID *int   // %a; nil outside an array
	Node        string // %N: the node the batch script runs on; "" while pending
	// Step, Task and NodeIndex are an srun task's %s, %t and %n; the zero
	// values are the batch step's ("batch", task 0 on node 0).
	Step      string
	Task      int
	NodeIndex int
}

// ExpandPath is ExpandFilename made absolute against the job's working
// directory, the path the batch script's stream is written to and the
// one scontrol shows. The pod side and the job record both call it, so
// the file written and the file shown cannot disagree.
func ExpandPath(pattern, workDir string, f FilenameFields) string {
	p := ExpandFilename(pattern, f)
	if workDir == "" || strings.HasPrefix(p, "/") {
		return p
	}
	return strings.TrimSuffix(workDir, "/") + "/" + p
}

// DefaultOutput is sbatch's output file when --output is not given.
func DefaultOutput(array bool) string {
	if array {
		return "slurm-%A_%a.out"
	}
	return "slurm-%j.out"
}

// ExpandFilename replaces sbatch's and srun's filename patterns
// (sbatch(1), "filename pattern"); for the batch step: %j %J (the job id: the batch
// step has no numeric step id), %x %u %A %a %b (task id modulo 10) %N,
// %n and %t (0: the batch script is task 0 on node 0), %s ("batch") and
// %% (a literal %), the numeric ones optionally zero-padded to a width
// ("%4a" gives 0007). %N stays as written until the job has a node, and
// unknown patterns stay as written. As in sbatch, a name
// holding a backslash is not expanded; its backslashes are dropped.
func ExpandFilename(pattern string, f FilenameFields) string {
	if strings.Contains(pattern, `\`) {
		return strings.ReplaceAll(pattern, `\`, "")
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' || i+1 == len(pattern) {
			b.WriteByte(pattern[i])
			continue
		}
		j := i + 1
		for j < len(pattern) && pattern[j] >= '0' && pattern[j] <= '9' {
			j++
		}
		if j == len(pattern) {
			b.WriteString(pattern[i:])
			break
		}
		width, _ := strconv.Atoi(pattern[i+1 : j])
		value, ok := fieldValue(pattern[j], f)
		if !ok {
			b.WriteString(pattern[i : j+1])
		} else {
			b.WriteString(pad(value, width, pattern[j]))
		}
		i = j
	}
	return b.String()
}

func fieldValue(c byte, f FilenameFields) (string, bool) {
	switch c {
	case '%':
		return "%", true
	case 'j', 'J':
		return strconv.FormatUint(uint64(f.JobID), 10), true
	case 'n':
		return strconv.Itoa(f.NodeIndex), true
	case 't':
		return strconv.Itoa(f.Task), true
	case 's':
		if f.Step == "" {
			return "batch", true
		}
		return f.Step, true
	case 'b':
		if f.ArrayTaskID == nil {
			return strconv.Itoa(noArrayTask % 10), true
		}
		return strconv.Itoa(*f.ArrayTaskID % 10), true
	case 'x':
		return f.Name, true
	case 'u':
		return f.User, true
	case 'N':
		return f.Node, f.Node != ""
	case 'A':
		if f.ArrayJobID == 0 {
			return strconv.FormatUint(uint64(f.JobID), 10), true
		}
		return strconv.FormatUint(uint64(f.ArrayJobID), 10), true
	case 'a':
		if f.ArrayTaskID == nil {
			return strconv.Itoa(noArrayTask), true
		}
		return strconv.Itoa(*f.ArrayTaskID), true
	}
	return "", false
}

// pad zero-pads the numeric patterns to width, as sbatch does.
func pad(v string, width int, c byte) string {
	if !strings.ContainsRune("jJAabnt", rune(c)) || len(v) >= width {
		return v
	}
	return strings.Repeat("0", width-len(v)) + v
}
