package sbatch

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// HostList compresses node names as Slurm prints them: "gpu-1", "gpu-2",
// "gpu-3", "gpu-7" become "gpu-[1-3,7]". Names are grouped by the text
// before their trailing number (zero-padded numbers keep their width);
// names without a number are listed as they are.
func HostList(names []string) string {
	type group struct {
		prefix string
		width  int // digits of the zero-padded names, else 0
		nums   []int
	}
	groups := map[string]*group{}
	var plain []string
	for _, n := range names {
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		digits := n[i:]
		num, err := strconv.Atoi(digits)
		if digits == "" || err != nil || len(digits) > 9 {
			plain = append(plain, n)
			continue
		}
		g := groups[n[:i]]
		if g == nil {
			g = &group{prefix: n[:i]}
			groups[n[:i]] = g
		}
		if len(digits) > 1 && digits[0] == '0' {
			g.width = max(g.width, len(digits))
		}
		g.nums = append(g.nums, num)
	}
	parts := plain
	for _, g := range groups {
		sort.Ints(g.nums)
		var ranges []string
		for i := 0; i < len(g.nums); {
			j := i
			for j+1 < len(g.nums) && g.nums[j+1] <= g.nums[j]+1 { // duplicates merge
				j++
			}
			r := fmt.Sprintf("%0*d", g.width, g.nums[i])
			if g.nums[j] != g.nums[i] {
				r += fmt.Sprintf("-%0*d", g.width, g.nums[j])
			}
			ranges = append(ranges, r)
			i = j + 1
		}
		if len(ranges) == 1 && !strings.Contains(ranges[0], "-") {
			parts = append(parts, g.prefix+ranges[0])
		} else {
			parts = append(parts, g.prefix+"["+strings.Join(ranges, ",")+"]")
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
