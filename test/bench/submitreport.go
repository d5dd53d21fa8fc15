package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// PrintSubmitTable writes each submission run as a row, then, per size and kind, Sluice's
// figures against slurmrestd's of the same run (the ratios).
func PrintSubmitTable(w io.Writer, results []SubmitResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tkind\tjobs\tacked\tfailed\ttook\tsubmissions/s\tp50\tp99\tmax\tto scheduler\tto squeue\tCPU-s\tapiserver CPU-s\tload\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t\n", r.Target, r.Kind, r.Jobs, r.Acked, r.Failed,
			round(r.Took), r.Rate(), fine(r.P50), fine(r.P99), fine(r.Max), visible(r.ToScheduler), visible(r.ToSqueue), r.CPUSeconds, r.APIServerCPU, r.Load)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.Target == TargetSluice && len(r.Writes) > 0 {
			fmt.Fprintf(w, "sluice %s %d: API writes %s\n", r.Kind, r.Jobs, writesLine(r.Writes))
		}
	}
	fmt.Fprintln(w, "\nsluice against slurmrestd, same run (target: rate >= 1, p99 <= 1.5, every job visible to the scheduler within 5 s of the last acknowledgement):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tjobs\trate ratio\tp99 ratio\tsluice to scheduler\t")
	for _, s := range results {
		if s.Target != TargetSluice {
			continue
		}
		i := slices.IndexFunc(results, func(r SubmitResult) bool {
			return r.Target == TargetSlurmrestd && r.Kind == s.Kind && r.Jobs == s.Jobs
		})
		if i < 0 {
			fmt.Fprintf(tw, "%s\t%d\tno slurmrestd run\t\t%s\t\n", s.Kind, s.Jobs, visible(s.ToScheduler))
			continue
		}
		o := results[i]
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%s\t\n", s.Kind, s.Jobs, s.Rate()/o.Rate(), s.P99.Seconds()/o.P99.Seconds(), visible(s.ToScheduler))
	}
	return tw.Flush()
}

// fine rounds a latency to 0.1 ms.
func fine(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

// visible prints a wait for visibility, "not seen" for -1.
func visible(d time.Duration) string {
	if d < 0 {
		return "not seen"
	}
	return round(d).String()
}

// writesLine lists writes by count, largest first.
func writesLine(w map[string]float64) string {
	keys := slices.Collect(maps.Keys(w))
	slices.SortFunc(keys, func(a, b string) int {
		if w[a] != w[b] {
			if w[a] > w[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		if w[k] >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
		}
	}
	return strings.Join(parts, ", ")
}
