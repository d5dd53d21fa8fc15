package sbatch

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// DefaultMaxArraySize is Slurm's default MaxArraySize: array indices are
// below it. A site sets its own (the REST server's maxArraySize).
const DefaultMaxArraySize = 1001

// MaxArraySizeLimit is the largest MaxArraySize a site may set (Slurm's
// own ceiling). ParseArray refuses indices at or above it, whatever the
// site's setting, so that reading back a stored array never depends on it.
const MaxArraySizeLimit = 4000001

// IndexRange is start-end with a step, all inclusive.
type IndexRange struct{ Start, End, Step int }

// Array is a parsed --array: index ranges and the %max concurrency limit
// (0: unlimited).
type Array struct {
	Ranges     []IndexRange
	MaxRunning int
}

// Count is the number of tasks: of distinct indices, as Slurm's task bitmap counts
// them ("5,5,5" is one task, "0-9,5-14" fifteen).
func (a Array) Count() int { return len(a.Indices()) }

// Indices lists the distinct task indices in increasing order, as Slurm numbers an
// array's tasks.
func (a Array) Indices() []int {
	// A bitmap, as Slurm's: at most MaxArraySizeLimit bits (ParseArray bounds the
	// indices and how many the ranges name).
	seen := make([]uint64, a.MaxIndex()/64+1)
	n := 0
	for _, r := range a.Ranges {
		for i := r.Start; i <= r.End; i += r.Step {
			if w, bit := i/64, uint64(1)<<(i%64); seen[w]&bit == 0 {
				seen[w] |= bit
				n++
			}
		}
	}
	out := make([]int, 0, n)
	for w, word := range seen {
		for ; word != 0; word &= word - 1 {
			out = append(out, w*64+bits.TrailingZeros64(word))
		}
	}
	return out
}

// ParseArray reads "0-15", "1,3,5-7", "0-15:4" (step), each optionally
// followed by "%max".
func ParseArray(s string) (Array, error) {
	var a Array
	spec, limit, hasLimit := strings.Cut(strings.TrimSpace(s), "%")
	if hasLimit {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 {
			return a, fmt.Errorf("invalid array %q: %%max must be a positive number", s)
		}
		a.MaxRunning = n
	}
	if spec == "" {
		return a, fmt.Errorf("invalid array %q: no indices", s)
	}
	// written is how many indices the ranges name, repeats included: bounded, so
	// listing the indices costs no more than the largest array a site may allow.
	written := 0
	for _, part := range strings.Split(spec, ",") {
		r, err := parseIndexRange(part)
		if err != nil {
			return a, fmt.Errorf("invalid array %s: %w", quoteShort(s), err)
		}
		a.Ranges = append(a.Ranges, r)
		if written += (r.End-r.Start)/r.Step + 1; written > MaxArraySizeLimit {
			return a, fmt.Errorf("invalid array %s: names more than %d indices", quoteShort(s), MaxArraySizeLimit)
		}
	}
	return a, nil
}

// MaxIndex is the highest task index.
func (a Array) MaxIndex() int {
	high := 0
	for _, r := range a.Ranges {
		high = max(high, r.Start+(r.End-r.Start)/r.Step*r.Step)
	}
	return high
}

func parseIndexRange(part string) (IndexRange, error) {
	r := IndexRange{Step: 1}
	span, step, hasStep := strings.Cut(part, ":")
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || n < 1 {
			return r, fmt.Errorf("step %q must be a positive number", step)
		}
		r.Step = n
	}
	lo, hi, isRange := strings.Cut(span, "-")
	start, err := index(lo)
	if err != nil {
		return r, err
	}
	r.Start, r.End = start, start
	if isRange {
		if r.End, err = index(hi); err != nil {
			return r, err
		}
	}
	if r.End < r.Start {
		return r, fmt.Errorf("range %q ends before it starts", span)
	}
	return r, nil
}

func index(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= MaxArraySizeLimit {
		return 0, fmt.Errorf("index %q must be a number from 0 to %d", s, MaxArraySizeLimit-1)
	}
	return n, nil
}

// FormatIndices writes sorted task indices as Slurm shows a set of array
// tasks: runs of consecutive indices as "a-b", others alone, comma
// separated ("4-15", "1,3,5"). ParseArray reads it back.
func FormatIndices(indices []int) string {
	var b strings.Builder
	for i := 0; i < len(indices); {
		j := i
		for j+1 < len(indices) && indices[j+1] == indices[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(indices[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(indices[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Step is SLURM_ARRAY_TASK_STEP: the step of an array given as one
// stepped range, else 1.
func (a Array) Step() int {
	if len(a.Ranges) == 1 {
		return a.Ranges[0].Step
	}
	return 1
}
