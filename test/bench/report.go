package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// PrintTable writes every run as a row, then the median of each figure per contender
// and mode (Summarize).
func PrintTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tmode\trun\tpods\tcreated in\tto bound\tbound pods/s\tbind p50\tbind p99\tbind max\twrites/pod\tCPU-s\tCPU-s/1000 pods\tpeak RSS MiB\tapiserver CPU-s\tload\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%.0f\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.0f\t%.1f\t%s\t\n", r.Contender, r.Mode, r.Repeat, r.Pods,
			round(r.Created), round(r.ToBound), r.BoundPerSecond(), round(r.BindP50), round(r.BindP99), round(r.BindMax),
			r.WritesPerPod(), r.CPUSeconds, r.CPUSeconds*1000/float64(r.Pods), r.PeakRSSMiB, r.APIServerCPU, r.Load)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nmedians per contender and mode:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tmode\truns\tbound pods/s\tof bare\tbind p50\tbind p99\tCPU-s\tCPU-s/1000 pods\tpeak RSS MiB\tapiserver CPU-s\t")
	sums := Summarize(results)
	for _, s := range sums {
		ofBare := "-"
		for _, b := range sums {
			if b.Contender == Bare && b.Mode == s.Mode && b.PodsPerSecond > 0 {
				ofBare = fmt.Sprintf("%.0f%%", 100*s.PodsPerSecond/b.PodsPerSecond)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.1f\t\n", s.Contender, s.Mode, s.Runs, s.PodsPerSecond, ofBare,
			round(s.BindP50), round(s.BindP99), s.CPUSeconds, s.CPUSecondsPer1000, s.PeakRSSMiB, s.APIServerCPU)
	}
	return tw.Flush()
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// Summary is the median of each figure over one contender's runs of one mode; each
// figure's median is taken on its own, so one row may mix runs.
type Summary struct {
	Contender, Mode          string
	Runs                     int
	PodsPerSecond            float64
	BindP50, BindP99         time.Duration
	CPUSeconds               float64
	CPUSecondsPer1000        float64
	PeakRSSMiB, APIServerCPU float64
}

// Summarize gives one Summary per contender and mode, in the order they first appear.
func Summarize(results []Result) []Summary {
	var out []Summary
	for i, r := range results {
		if slices.ContainsFunc(results[:i], func(p Result) bool { return p.Contender == r.Contender && p.Mode == r.Mode }) {
			continue
		}
		var runs []Result
		for _, o := range results {
			if o.Contender == r.Contender && o.Mode == r.Mode {
				runs = append(runs, o)
			}
		}
		out = append(out, Summary{Contender: r.Contender, Mode: r.Mode, Runs: len(runs),
			PodsPerSecond:     median(runs, Result.BoundPerSecond),
			BindP50:           time.Duration(median(runs, func(r Result) float64 { return float64(r.BindP50) })),
			BindP99:           time.Duration(median(runs, func(r Result) float64 { return float64(r.BindP99) })),
			CPUSeconds:        median(runs, func(r Result) float64 { return r.CPUSeconds }),
			CPUSecondsPer1000: median(runs, func(r Result) float64 { return r.CPUSeconds * 1000 / float64(r.Pods) }),
			PeakRSSMiB:        median(runs, func(r Result) float64 { return r.PeakRSSMiB }),
			APIServerCPU:      median(runs, func(r Result) float64 { return r.APIServerCPU }),
		})
	}
	return out
}

// median of f over runs; of an even count, the mean of the middle two.
func median(runs []Result, f func(Result) float64) float64 {
	if len(runs) == 0 {
		return 0
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
