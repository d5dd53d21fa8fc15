package sbatch

import (
	"runtime"
	"strings"
	"testing"
)

// allocBudget is what a parser may allocate for an input of n bytes: a small multiple
// of its size, plus what its largest legal answer costs (cap), never more. A parser
// that expands its input before checking its bounds fails this with the first input
// the fuzzer grows into a wide range.
func allocBudget(n, cap int) uint64 { return uint64(64*n + cap + 64<<10) }

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// parserFuzzSeeds are inputs that once cost far more than their size.
var parserFuzzSeeds = []string{
	"n[0-4095]", "n[0-99999999999]", "a[0-4000],b[0-4000],c[0-4000]", strings.Repeat("n[0-4000],", 200),
	"n[" + strings.Repeat("0", 250) + "-4000]", "0-4000000", strings.Repeat("0-1000,", 500), "5,5,5,5",
	"afterok:" + strings.Repeat("1:", 1000) + "2", "gpu:h100:8,gpu:" + strings.Repeat("9", 40),
}

// The largest legal answers: a full node list (4096 names of 253 bytes) and a full
// array's index list and bitmap.
const (
	nodeListCap = 4096 * (256 + 64) // names in their allocation class, and the list growing
	arrayCap    = MaxArraySizeLimit*8 + MaxArraySizeLimit/8
)

func FuzzParseNodeList(f *testing.F) {
	for _, s := range parserFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := allocated(func() { _, _ = ParseNodeList(s) }); got > allocBudget(len(s), nodeListCap) {
			t.Errorf("ParseNodeList of %d bytes allocated %d bytes", len(s), got)
		}
	})
}

func FuzzParseArray(f *testing.F) {
	for _, s := range parserFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := allocated(func() {
			if a, err := ParseArray(s); err == nil {
				_ = a.Indices()
			}
		})
		if got > allocBudget(len(s), arrayCap) {
			t.Errorf("ParseArray and Indices of %d bytes allocated %d bytes", len(s), got)
		}
	})
}

func FuzzParseDependency(f *testing.F) {
	for _, s := range parserFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := allocated(func() { _, _ = ParseDependency(s) }); got > allocBudget(len(s), 0) {
			t.Errorf("ParseDependency of %d bytes allocated %d bytes", len(s), got)
		}
	})
}

func FuzzParseGRES(f *testing.F) {
	for _, s := range parserFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := allocated(func() { _, _ = ParseGRES(s) }); got > allocBudget(len(s), 0) {
			t.Errorf("ParseGRES of %d bytes allocated %d bytes", len(s), got)
		}
	})
}

// A megabyte of host list, as one request's body carries it, costs its refusal and no
// more: the shapes that once expanded in full before the cap was checked.
func TestHostListOfAMegabyteIsRefusedCheaply(t *testing.T) {
	const mib = 1 << 20
	for name, s := range map[string]string{
		"many wide ranges":   "n[" + strings.Repeat("0-4000,", mib/7) + "0]",
		"many bracket items": strings.Repeat("n[0-4000],", mib/10),
		"long padded range":  "n[" + strings.Repeat("0", mib) + "-9]",
		"one huge name":      strings.Repeat("x", mib),
	} {
		var err error
		got := allocated(func() { _, err = ParseNodeList(s) })
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if got > allocBudget(len(s), nodeListCap) {
			t.Errorf("%s: %d bytes allocated %d bytes for the refusal", name, len(s), got)
		}
		if len(err.Error()) > 512 {
			t.Errorf("%s: the error echoes the input (%d bytes)", name, len(err.Error()))
		}
	}
}
