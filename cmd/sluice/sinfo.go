package main

import (
	"cmp"
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

// sinfoRow is one line of sinfo: nodes of one partition in one state
// (and, for sinfo -R, with one reason set by one user at one time).
type sinfoRow struct {
	partition, avail, limit, state, longState, gres string
	reason, reasonUser, reasonTime                  string
	nodes                                           []string
}

// nodeState maps a node's state flags to sinfo's long state name (%T):
// the DRAIN flag wins over the base state, as in Slurm, and reads
// "draining" while jobs still run on the node, "drained" once it is empty.
func nodeState(states []string) string {
	has := func(s string) bool { return slices.Contains(states, s) }
	base := "unknown"
	switch {
	case has("DOWN"):
		base = "down"
	case has("ALLOCATED"):
		base = "allocated"
	case has("MIXED"):
		base = "mixed"
	case has("IDLE"):
		base = "idle"
	}
	if has("DRAIN") {
		if base == "allocated" || base == "mixed" {
			return "draining"
		}
		return "drained"
	}
	return base
}

// compactStates are sinfo's short state names (%t).
var compactStates = map[string]string{
	"down": "down", "allocated": "alloc", "mixed": "mix", "idle": "idle",
	"draining": "drng", "drained": "drain", "unknown": "unk",
}

// nodeStateName is a node's short state name (%t).
func nodeStateName(states []string) string { return compactStates[nodeState(states)] }

// unavailable reports whether sinfo -R lists the node: down or draining/drained.
func unavailable(states []string) bool {
	switch nodeState(states) {
	case "down", "draining", "drained":
		return true
	}
	return false
}

// sinfoRows groups nodes into sinfo's lines: by partition and state; one
// node a line with byNode; by reason with byReason (sinfo -R, which has no
// partition column). A partition shows with a "*" when it is the default.
func sinfoRows(parts []client.Partition, nodes []client.Node, byNode, byReason bool) []sinfoRow {
	limits := map[string]string{}
	avail := map[string]string{}
	label := map[string]string{}
	var order []string
	for _, p := range parts {
		order = append(order, p.Name)
		label[p.Name] = p.Name
		if p.IsDefault() {
			label[p.Name] = p.Name + "*"
		}
		v, ok := p.Maximums.Time.Value()
		limits[p.Name] = slurmTimeLimit(v, ok)
		avail[p.Name] = "up"
		if slices.Contains(p.Partition.State, "DOWN") || slices.Contains(p.Partition.State, "INACTIVE") {
			avail[p.Name] = "down"
		}
	}
	type key struct{ part, state, node, reason, user, time string }
	groups := map[key]*sinfoRow{}
	var keys []key
	for _, n := range nodes {
		ps := n.Partitions
		if len(ps) == 0 || byReason {
			ps = []string{""}
		}
		for _, p := range ps {
			k := key{part: p, state: nodeStateName(n.State)}
			if byNode {
				k.node = n.Name
			}
			if byReason {
				k.reason, k.user, k.time = n.Reason, n.ReasonSetUser, slurmTimestamp(n.ReasonChangedAt)
			}
			g, ok := groups[k]
			if !ok {
				label := label[p]
				if label == "" {
					label = p
				}
				g = &sinfoRow{partition: label, avail: avail[p], limit: limits[p], state: k.state, longState: nodeState(n.State),
					gres: n.GRES, reason: n.Reason, reasonUser: n.ReasonSetUser, reasonTime: k.time}
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
		return cmp.Or(strings.Compare(a.node, b.node), strings.Compare(a.reason, b.reason),
			strings.Compare(a.user, b.user), strings.Compare(a.time, b.time))
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
		nodes = slices.DeleteFunc(nodes, func(n client.Node) bool { return !unavailable(n.State) })
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
	rows := sinfoRows(parts, nodes, *byNode, *reasons)
	return writeTable(os.Stdout, f, sinfoHeaders, *noHeader, len(rows), func(r int, l byte) string {
		return sinfoValue(rows[r], l)
	})
}

// sinfoValue is one row's value for one format letter.
func sinfoValue(row sinfoRow, letter byte) string {
	switch letter {
	case 'P':
		return row.partition
	case 'a':
		return row.avail
	case 'l':
		return row.limit
	case 'D':
		return strconv.Itoa(len(row.nodes))
	case 't':
		return row.state
	case 'T':
		return row.longState
	case 'N':
		return slurmapi.HostList(row.nodes)
	case 'G':
		return row.gres
	case 'E':
		if row.reason == "" {
			return "none"
		}
		return row.reason
	case 'u':
		if row.reasonUser == "" {
			return "Unknown"
		}
		return row.reasonUser
	case 'H':
		if row.reasonTime == "N/A" {
			return "Unknown"
		}
		return row.reasonTime
	}
	return ""
}
