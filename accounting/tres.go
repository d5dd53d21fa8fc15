package accounting

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// TRES names as Slurm prints them.
const (
	TRESCPU     = "cpu"
	TRESMem     = "mem"
	TRESGPU     = "gres/gpu"
	TRESGPUMem  = "gres/gpumem"
	TRESNode    = "node"
	TRESBilling = "billing"
)

// KnownTRES lists the TRES names the ledger tracks, in Slurm's order.
var KnownTRES = []string{TRESCPU, TRESMem, TRESNode, TRESBilling, TRESGPU, TRESGPUMem}

// ParseTRESList parses sreport's -T value ("gres/gpu,cpu"); "gpu" is
// accepted for "gres/gpu". The empty string selects gres/gpu, the resource
// Sluice exists to share.
func ParseTRESList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return []string{TRESGPU}, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "gpu" {
			name = TRESGPU
		}
		if name == "all" {
			return append([]string(nil), KnownTRES...), nil
		}
		if (TRES{}).Amount(name) < 0 {
			return nil, fmt.Errorf("unknown TRES %q (want one of %s)", name, strings.Join(KnownTRES, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// Amount returns the quantity of one TRES (memory in MB), or -1 for a name
// the ledger does not track.
func (t TRES) Amount(name string) float64 {
	switch name {
	case TRESCPU:
		return float64(t.CPUs)
	case TRESMem:
		return float64(t.MemMB)
	case TRESGPU:
		return t.GPUs
	case TRESGPUMem:
		return float64(t.GPUMemMB)
	case TRESNode:
		return float64(t.Nodes)
	case TRESBilling:
		return t.Billing
	}
	return -1
}

// String formats a TRES set the way sacct's AllocTRES does, names in the
// order sacct prints them (by name): "billing=8,cpu=8,gres/gpu=2,mem=64G,node=1",
// omitting zeros. GPUs keep their fraction. gres/gpumem is Sluice's and is
// printed only beside a share of a GPU (SharesAGPU), where it says how much
// of the device the job holds; a whole-GPU job reads as it would in Slurm,
// whose allocations carry no gres/gpumem. sreport -T gres/gpumem reads the
// ledger's column, not this string.
func (t TRES) String() string {
	parts := map[string]string{}
	if t.Billing > 0 {
		parts[TRESBilling] = strconv.FormatFloat(t.Billing, 'f', -1, 64)
	}
	if t.CPUs > 0 {
		parts[TRESCPU] = strconv.FormatInt(t.CPUs, 10)
	}
	if t.GPUs > 0 {
		parts[TRESGPU] = strconv.FormatFloat(t.GPUs, 'f', -1, 64)
	}
	if t.GPUMemMB > 0 && t.SharesAGPU() {
		parts[TRESGPUMem] = megabytes(t.GPUMemMB)
	}
	if t.MemMB > 0 {
		parts[TRESMem] = megabytes(t.MemMB)
	}
	if t.Nodes > 0 {
		parts[TRESNode] = strconv.FormatInt(t.Nodes, 10)
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + "=" + parts[n]
	}
	return strings.Join(out, ",")
}

// SharesAGPU reports whether the set holds part of a GPU rather than whole
// ones: a fractional gres/gpu, or GPU memory asked for alone (a request by
// memory, before the binder turns it into a portion). Two halves of two GPUs
// add up to gres/gpu=1 and read as one whole GPU: the ledger keeps the
// total, not each device's portion.
func (t TRES) SharesAGPU() bool {
	return t.GPUs != math.Trunc(t.GPUs) || (t.GPUs == 0 && t.GPUMemMB > 0)
}

// megabytes prints a size as Slurm does: in G when it is whole gigabytes.
func megabytes(mb int64) string {
	if mb%1024 == 0 {
		return strconv.FormatInt(mb/1024, 10) + "G"
	}
	return strconv.FormatInt(mb, 10) + "M"
}
