package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(command{name: "sinfo", summary: "show partitions and node states (like Slurm's sinfo)", run: runSinfo})
}

const (
	sinfoDefaultFormat = "%9P %5a %.10l %.6D %.6t %N"
	sinfoNodeFormat    = "%N %.6D %9P %.6t"
	sinfoReasonFormat  = "%20E %9u %19H %N"
)

var sinfoHeaders = map[byte]string{
	'P': "PARTITION", 'a': "AVAIL", 'l': "TIMELIMIT", 'D': "NODES", 't': "STATE", 'T': "STATE",
	'N': "NODELIST", 'G': "GRES", 'E': "REASON", 'u': "USER", 'H': "TIMESTAMP", 'c': "CPUS",
}

// sinfoRow is one line of sinfo: nodes of one partition in one state.
type sinfoRow struct {
	partition, avail, limit, state, gres, reason string
	nodes                                        []string
}

// nodeStateName maps a node's state flags to sinfo's compact name.
func nodeStateName(states []string) string {
	has := func(s string) bool { return slices.Contains(states, s) }
	base := "unk"
	switch {
	case has("DOWN"):
		base = "down"
	case has("ALLOCATED"):
		base = "alloc"
	case has("MIXED"):
		base = "mix"
	case has("IDLE"):
		base = "idle"
	}
	if has("DRAIN") {
		// Slurm: drng while jobs still run on a draining node, drain once empty.
		if base == "alloc" || base == "mix" {
			return "drng"
		}
		return "drain"
	}
	return base
}

func sinfoRows(parts []client.Partition, nodes []client.Node, byNode bool) []sinfoRow {
	limits := map[string]string{}
	avail := map[string]string{}
	var order []string
	for _, p := range parts {
		order = append(order, p.Name)
		v, ok := p.Maximums.Time.Value()
		limits[p.Name] = slurmTimeLimit(v, ok)
		avail[p.Name] = "up"
		if slices.Contains(p.Partition.State, "DOWN") || slices.Contains(p.Partition.State, "INACTIVE") {
			avail[p.Name] = "down"
		}
	}
	type key struct{ part, state, reason string }
	groups := map[key]*sinfoRow{}
	var keys []key
	for _, n := range nodes {
		ps := n.Partitions
		if len(ps) == 0 {
			ps = []string{""}
		}
		for _, p := range ps {
			k := key{part: p, state: nodeStateName(n.State)}
			if byNode {
				k.reason = n.Name
			}
			g, ok := groups[k]
			if !ok {
				g = &sinfoRow{partition: p, avail: avail[p], limit: limits[p], state: k.state, gres: n.GRES, reason: n.Reason}
				groups[k] = g
				keys = append(keys, k)
			}
			g.nodes = append(g.nodes, n.Name)
		}
	}
	rank := func(p string) int {
		if i := slices.Index(order, p); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if d := rank(a.part) - rank(b.part); d != 0 {
			return d
		}
		if c := strings.Compare(a.state, b.state); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	rows := make([]sinfoRow, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, *groups[k])
	}
	return rows
}

func runSinfo(args []string) error {
	fs := flag.NewFlagSet("sinfo", flag.ContinueOnError)
	token := fs.String("token", "", "auth/jwt token (default $SLURM_JWT)")
	format := fs.String("o", "", "output format, Slurm's %-letters; also --format")
	fs.StringVar(format, "format", "", "output format")
	noHeader := fs.Bool("h", false, "no header; also --noheader")
	fs.BoolVar(noHeader, "noheader", false, "no header")
	byNode := fs.Bool("N", false, "one line per node; also --Node")
	fs.BoolVar(byNode, "Node", false, "one line per node")
	reasons := fs.Bool("R", false, "list the reasons nodes are down or drained; also --list-reasons")
	fs.BoolVar(reasons, "list-reasons", false, "list the reasons nodes are down or drained")
	partition := fs.String("p", "", "only this partition; also --partition")
	fs.StringVar(partition, "partition", "", "only this partition")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice sinfo [flags]\n\nShows partitions and the state of their nodes (idle, mix, alloc, drain, down).\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	c, err := client.FromEnv(*token)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parts, err := c.Partitions(ctx)
	if err != nil {
		return err
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return err
	}
	if *partition != "" {
		nodes = slices.DeleteFunc(nodes, func(n client.Node) bool { return !slices.Contains(n.Partitions, *partition) })
		parts = slices.DeleteFunc(parts, func(p client.Partition) bool { return p.Name != *partition })
	}
	if *reasons {
		nodes = slices.DeleteFunc(nodes, func(n client.Node) bool {
			s := nodeStateName(n.State)
			return s != "down" && s != "drain" && s != "drng"
		})
	}
	f := *format
	switch {
	case f != "":
	case *reasons:
		f = sinfoReasonFormat
	case *byNode:
		f = sinfoNodeFormat
	default:
		f = sinfoDefaultFormat
	}
	rows := sinfoRows(parts, nodes, *byNode || *reasons)
	return writeTable(os.Stdout, f, sinfoHeaders, *noHeader, len(rows), func(r int, l byte) string {
		row := rows[r]
		switch l {
		case 'P':
			return row.partition
		case 'a':
			return row.avail
		case 'l':
			return row.limit
		case 'D':
			return strconv.Itoa(len(row.nodes))
		case 't', 'T':
			return row.state
		case 'N':
			return slurmapi.HostList(row.nodes)
		case 'G':
			return row.gres
		case 'E':
			if row.reason == "" {
				return "none"
			}
			return row.reason
		}
		return ""
	})
}
