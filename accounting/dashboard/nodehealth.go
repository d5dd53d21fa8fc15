package dashboard

import (
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/sluicehq/sluice/accounting/report"
)

// NodeHealth is the page's node health: per partition availability and mean time
// between faults (sreport cluster NodeHealth), and each node's history in the window.
type NodeHealth struct {
	Partitions []report.HealthRow `json:"partitions"`
	History    []NodeEvent        `json:"history"`
}

// NodeEvent is one fault (a down interval) or validation run of a node.
type NodeEvent struct {
	Node string `json:"node"`
	// Kind is "fault", or the validation's kind ("idle", "repair").
	Kind string `json:"kind"`
	// What is the fault's reason, or the validation's result and what failed.
	What  string    `json:"what"`
	GPUs  float64   `json:"gpus,omitempty"` // a GPU-local fault's GPUs; 0: the whole node
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"` // zero: still out, or still running
	// OutOfService is how long the fault kept the node (or its GPUs) out, up to now.
	OutOfService float64 `json:"out_of_service_seconds,omitempty"`
}

// nodeHealth answers node-health?start=&end=[&nodes=a,b]: newest events first.
func (d *Dashboard) nodeHealth(r *http.Request) (any, error) {
	now := d.cfg.Clock()
	q := r.URL.Query()
	start, end, err := window(q, now)
	if err != nil {
		return nil, err
	}
	ctx, s := r.Context(), d.cfg.Store
	rows, err := report.NodeHealth(ctx, s, report.SreportQuery{Start: start, End: end, Cluster: d.cfg.Cluster}, now)
	if err != nil {
		return nil, err
	}
	downs, err := s.NodeDowns(ctx, start, end)
	if err != nil {
		return nil, err
	}
	runs, err := s.NodeValidations(ctx, start, end)
	if err != nil {
		return nil, err
	}
	only := list(q, "nodes")
	want := func(n string) bool { return len(only) == 0 || slices.Contains(only, n) }
	out := NodeHealth{Partitions: rows, History: []NodeEvent{}}
	for _, dn := range downs {
		if !want(dn.Node) {
			continue
		}
		until := dn.End
		if until.IsZero() || until.After(now) {
			until = now
		}
		out.History = append(out.History, NodeEvent{Node: dn.Node, Kind: "fault", What: dn.Reason, GPUs: dn.TRES.GPUs,
			Start: dn.Start, End: dn.End, OutOfService: until.Sub(dn.Start).Seconds()})
	}
	for _, v := range runs {
		if !want(v.Node) {
			continue
		}
		what := v.Result
		if v.Detail != "" {
			what += ": " + v.Detail
		}
		out.History = append(out.History, NodeEvent{Node: v.Node, Kind: v.Kind, What: what, Start: v.Start, End: v.End})
	}
	sort.SliceStable(out.History, func(i, j int) bool { return out.History[i].Start.After(out.History[j].Start) })
	if out.Partitions == nil {
		out.Partitions = []report.HealthRow{}
	}
	return out, nil
}
