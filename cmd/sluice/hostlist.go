package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// compressHostlist writes node names the way Slurm does: "h100-0,h100-1,
// h100-3" becomes "h100-[0-1,3]". Names without a numeric suffix stay as
// they are.
func compressHostlist(names []string) string {
	type group struct {
		prefix string
		width  int
		nums   []int
	}
	var plain []string
	groups := map[string]*group{}
	var order []string
	for _, n := range names {
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		if i == len(n) {
			plain = append(plain, n)
			continue
		}
		num, _ := strconv.Atoi(n[i:])
		width := 0
		if n[i] == '0' && len(n)-i > 1 {
			width = len(n) - i // zero-padded: keep the padding
		}
		key := n[:i]
		g, ok := groups[key]
		if !ok {
			g = &group{prefix: key}
			groups[key] = g
			order = append(order, key)
		}
		g.width = max(g.width, width)
		g.nums = append(g.nums, num)
	}
	sort.Strings(order)
	out := append([]string(nil), plain...)
	sort.Strings(out)
	for _, key := range order {
		g := groups[key]
		sort.Ints(g.nums)
		g.nums = dedupInts(g.nums)
		if len(g.nums) == 1 {
			out = append(out, g.prefix+pad(g.nums[0], g.width))
			continue
		}
		var ranges []string
		for i := 0; i < len(g.nums); {
			j := i
			for j+1 < len(g.nums) && g.nums[j+1] == g.nums[j]+1 {
				j++
			}
			if i == j {
				ranges = append(ranges, pad(g.nums[i], g.width))
			} else {
				ranges = append(ranges, pad(g.nums[i], g.width)+"-"+pad(g.nums[j], g.width))
			}
			i = j + 1
		}
		out = append(out, g.prefix+"["+strings.Join(ranges, ",")+"]")
	}
	return strings.Join(out, ",")
}

func pad(n, width int) string { return fmt.Sprintf("%0*d", width, n) }

func dedupInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
