package slurmapi

import (
	"slices"
	"strconv"
	"strings"
)

// RepeatedCounts writes per-node counts as Slurm's SLURM_TASKS_PER_NODE
// and SLURM_JOB_CPUS_PER_NODE do: runs of equal counts as COUNT(xN), in
// node order, comma separated ("2(x3),1"; a single node's "4").
func RepeatedCounts(counts []int) string {
	var b strings.Builder
	for i := 0; i < len(counts); {
		j := i + 1
		for j < len(counts) && counts[j] == counts[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(counts[i]))
		if j-i > 1 {
			b.WriteString("(x" + strconv.Itoa(j-i) + ")")
		}
		i = j
	}
	return b.String()
}

// ExpandCounts reads what RepeatedCounts writes ("4(x2),2" is 4,4,2); nil
// for anything else.
func ExpandCounts(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		n, times := item, "1"
		if a, b, ok := strings.Cut(item, "(x"); ok {
			n, times = a, strings.TrimSuffix(b, ")")
		}
		c, err1 := strconv.Atoi(n)
		k, err2 := strconv.Atoi(times)
		if err1 != nil || err2 != nil || c < 0 || k < 1 || k > 1<<16 {
			return nil
		}
		out = append(out, slices.Repeat([]int{c}, k)...)
	}
	return out
}

// BlockCounts spreads tasks over nodes as Sluice lays a job's tasks out:
// n/nodes on each node, the first nodes taking one more of the remainder
// (5 tasks on 2 nodes: 3,2).
func BlockCounts(tasks, nodes int) []int {
	if nodes <= 0 {
		return nil
	}
	counts := make([]int, nodes)
	for i := range counts {
		counts[i] = tasks / nodes
		if i < tasks%nodes {
			counts[i]++
		}
	}
	return counts
}
