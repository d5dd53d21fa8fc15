package cli

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(Command{Name: "sinfo", Summary: "show partitions and node states (like Slurm's sinfo)", Run: runSinfo, Flags: flagsOf(sinfoFlags)})
}

// Slurm's sinfo layouts: default, -N, -R, -l, -N -l and -s.
const (
	sinfoDefaultFormat  = "%9P %5a %.10l %.6D %.6t %N"
	sinfoNodeFormat     = "%N %.6D %9P %.6t"
	sinfoReasonFormat   = "%20E %9u %19H %N"
	sinfoLongFormat     = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
	sinfoNodeLongFormat = "%N %.6D %.9P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E"
	sinfoSummaryFormat  = "%9P %.5a %.10l %.16F  %N"
)

var sinfoHeaders = map[byte]string{
	'P': "PARTITION", 'R': "PARTITION", 'a': "AVAIL", 'l': "TIMELIMIT", 'D': "NODES", 't': "STATE", 'T': "STATE",
	'N': "NODELIST", 'G': "GRES", 'E': "REASON", 'u': "USER", 'H': "TIMESTAMP", 'c': "CPUS",
	's': "JOB_SIZE", 'r': "ROOT", 'h': "OVERSUBS", 'g': "GROUPS", 'z': "S:C:T", 'm': "MEMORY",
	'd': "TMP_DISK", 'w': "WEIGHT", 'f': "AVAIL_FE", 'F': "NODES(A/I/O/T)", 'Y': "TOPOLOGY",
}

// sinfoFields are sinfo -O's field names and their format letters.
var sinfoFields = map[string]byte{
	"partition": 'P', "partitionname": 'R', "available": 'a', "timelimit": 'l', "nodes": 'D',
	"statecompact": 't', "statelong": 'T', "nodelist": 'N', "nodehost": 'N', "gres": 'G', "reason": 'E',
	"user": 'u', "timestamp": 'H', "cpus": 'c', "size": 's', "root": 'r', "oversubscribe": 'h',
	"groups": 'g', "memory": 'm', "disk": 'd', "weight": 'w', "features": 'f', "nodeaiot": 'F',
	"topology": 'Y', // Sluice's: the nodes' topology domains (Partition spec.topology)
}

// sinfoRow is one line of sinfo: nodes of one partition in one state
// (and, for sinfo -R, with one reason set by one user at one time).
type sinfoRow struct {
	partition, avail, limit, state, longState, gres string
	reason, reasonUser, reasonTime                  string
	features, topology                              string
	nodes                                           []string
	cpus, memoryMiB                                 int64  // of the row's first node
	aiot                                            [4]int // allocated/idle/other/total, for -s
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
	// An idle node of an active reservation is held for it: maintenance for a MAINT
	// reservation, reserved for another; a busy one shows its work, as in Slurm.
	if base == "idle" && has("MAINTENANCE") {
		return "maintenance"
	}
	if base == "idle" && has("RESERVED") {
		return "reserved"
	}
	return base
}

// compactStates are sinfo's short state names (%t).
var compactStates = map[string]string{
	"down": "down", "allocated": "alloc", "mixed": "mix", "idle": "idle",
	"draining": "drng", "drained": "drain", "unknown": "unk", "maintenance": "maint", "reserved": "resv",
}

// nodeStateName is a node's short state name (%t).
func nodeStateName(states []string) string { return compactStates[nodeState(states)] }

// sinfoStates reads sinfo -t: state names, long or short, in any case, separated by
// commas; drain stands for draining and drained, as Slurm's DRAIN flag does. The
// answer holds long names (nodeState's).
func sinfoStates(list string) (map[string]bool, error) {
	long := map[string]string{"alloc": "allocated", "mix": "mixed", "drng": "draining", "unk": "unknown", "maint": "maintenance", "resv": "reserved"}
	want := map[string]bool{}
	for _, name := range strings.Split(strings.ToLower(list), ",") {
		name = strings.TrimSpace(name)
		if l, ok := long[name]; ok {
			name = l
		}
		switch {
		case name == "drain":
			want["draining"], want["drained"] = true, true
		case compactStates[name] != "":
			want[name] = true
		default:
			return nil, fmt.Errorf("invalid node state specified: %s", name)
		}
	}
	return want, nil
}

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
	// Nodes of a row share their features and topology, so that %f and -O topology are
	// true of every node the row lists.
	type key struct{ part, state, node, reason, user, time, features, topology string }
	groups := map[key]*sinfoRow{}
	var keys []key
	for _, n := range nodes {
		ps := n.Partitions
		if len(ps) == 0 || byReason {
			ps = []string{""}
		}
		for _, p := range ps {
			k := key{part: p, state: nodeStateName(n.State), features: strings.Join(n.Features, ","), topology: n.Topology}
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
					gres: n.GRES, reason: n.Reason, reasonUser: n.ReasonSetUser, reasonTime: k.time, cpus: n.CPUs, memoryMiB: n.RealMemory,
					features: k.features, topology: k.topology}
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
			strings.Compare(a.user, b.user), strings.Compare(a.time, b.time), strings.Compare(a.features, b.features),
			strings.Compare(a.topology, b.topology))
	})
	rows := make([]sinfoRow, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, *groups[k])
	}
	return rows
}

// sinfoOpts are the values sinfoFlags binds its flags to.
type sinfoOpts struct {
	token, format, partition, states, fields                         string
	noHeader, byNode, reasons, long, summarize, asJSON, reservations bool
}

// sinfoFlags builds sinfo's options apart from runSinfo, so docs/cli.md and its
// tests read the very flags the command parses.
func sinfoFlags() (*flag.FlagSet, *sinfoOpts) {
	fs := flag.NewFlagSet("sinfo", flag.ContinueOnError)
	o := &sinfoOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.StringVar(&o.format, "o", "", "output format, Slurm's %-letters; also --format")
	fs.StringVar(&o.format, "format", "", "output format")
	fs.BoolVar(&o.noHeader, "h", false, "no header; also --noheader")
	fs.BoolVar(&o.noHeader, "noheader", false, "no header")
	fs.BoolVar(&o.byNode, "N", false, "one line per node; also --Node")
	fs.BoolVar(&o.byNode, "Node", false, "one line per node")
	fs.BoolVar(&o.reasons, "R", false, "list the reasons nodes are down or drained; also --list-reasons")
	fs.BoolVar(&o.reasons, "list-reasons", false, "list the reasons nodes are down or drained")
	fs.StringVar(&o.partition, "p", "", "only this partition; also --partition")
	fs.StringVar(&o.partition, "partition", "", "only this partition")
	fs.BoolVar(&o.long, "l", false, "long layout, dated; also --long")
	fs.BoolVar(&o.long, "long", false, "long layout")
	fs.BoolVar(&o.summarize, "s", false, "one line per partition with node counts allocated/idle/other/total; also --summarize")
	fs.BoolVar(&o.summarize, "summarize", false, "one line per partition")
	fs.StringVar(&o.states, "t", "", "only nodes in these states (idle,alloc,mix,drain,down,...); also --states")
	fs.StringVar(&o.states, "states", "", "only nodes in these states")
	fs.StringVar(&o.fields, "O", "", "output fields by name (partition,nodes:.5,statelong,...); also --Format")
	fs.StringVar(&o.fields, "Format", "", "output fields by name")
	fs.BoolVar(&o.asJSON, "json", false, "print the lines as JSON")
	fs.BoolVar(&o.reservations, "T", false, "list the advance reservations (name, state, start, end, duration, nodes); also --reservation")
	fs.BoolVar(&o.reservations, "reservation", false, "list the advance reservations")
	return fs, o
}

func runSinfo(args []string) error {
	fs, o := sinfoFlags()
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice sinfo [flags]\n\nShows partitions and the state of their nodes (idle, mix, alloc, drain, down).\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := ParseFlags(fs, args); help || err != nil {
		return err
	}
	var wantStates map[string]bool
	if o.states != "" {
		var err error
		if wantStates, err = sinfoStates(o.states); err != nil {
			return UsageError{err.Error()}
		}
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	if o.reservations {
		list, err := c.Reservations(ctx)
		if err != nil {
			return err
		}
		writeSinfoReservations(os.Stdout, list, time.Now())
		return nil
	}
	parts, err := c.Partitions(ctx)
	if err != nil {
		return err
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return err
	}
	if o.partition != "" {
		nodes = slices.DeleteFunc(nodes, func(n client.Node) bool { return !slices.Contains(n.Partitions, o.partition) })
		parts = slices.DeleteFunc(parts, func(p client.Partition) bool { return p.Name != o.partition })
	}
	if o.reasons {
		nodes = slices.DeleteFunc(nodes, func(n client.Node) bool { return !unavailable(n.State) })
	}
	if o.states != "" {
		nodes = slices.DeleteFunc(nodes, func(n client.Node) bool { return !wantStates[nodeState(n.State)] })
	}
	f := o.format
	switch {
	case f != "":
	case o.fields != "":
		if f, err = formatFromFields("sinfo", o.fields, sinfoFields); err != nil {
			return err
		}
	case o.reasons:
		f = sinfoReasonFormat
	case o.summarize:
		f = sinfoSummaryFormat
	case o.byNode && o.long:
		f = sinfoNodeLongFormat
	case o.byNode:
		f = sinfoNodeFormat
	case o.long:
		f = sinfoLongFormat
	default:
		f = sinfoDefaultFormat
	}
	var rows []sinfoRow
	if o.summarize {
		rows = sinfoSummary(parts, nodes)
	} else {
		rows = sinfoRows(parts, nodes, o.byNode, o.reasons)
	}
	if o.asJSON {
		return writeSinfoJSON(os.Stdout, rows)
	}
	if o.long && !o.noHeader {
		fmt.Println(time.Now().Format("Mon Jan 02 15:04:05 2006")) // sinfo -l dates its listing
	}
	return writeTable(os.Stdout, f, sinfoHeaders, o.noHeader, len(rows), func(r int, l byte) string {
		return sinfoValue(rows[r], l)
	})
}

// sinfoSummary is sinfo -s: one line per partition, its nodes counted
// allocated (alloc, mix), idle, other (down, draining, drained) and total.
func sinfoSummary(parts []client.Partition, nodes []client.Node) []sinfoRow {
	var rows []sinfoRow
	for _, r := range sinfoRows(parts, nodes, false, false) {
		i := slices.IndexFunc(rows, func(x sinfoRow) bool { return x.partition == r.partition })
		if i < 0 {
			rows = append(rows, sinfoRow{partition: r.partition, avail: r.avail, limit: r.limit})
			i = len(rows) - 1
		}
		slot := 2
		switch r.longState {
		case "allocated", "mixed":
			slot = 0
		case "idle":
			slot = 1
		}
		rows[i].aiot[slot] += len(r.nodes)
		rows[i].aiot[3] += len(r.nodes)
		rows[i].nodes = append(rows[i].nodes, r.nodes...)
	}
	for i := range rows {
		slices.Sort(rows[i].nodes)
	}
	return rows
}

// writeSinfoJSON prints sinfo's lines as JSON, one object per line with
// the fields sinfo --json gives each entry.
func writeSinfoJSON(w io.Writer, rows []sinfoRow) error {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, map[string]any{
			"partition": map[string]any{"name": strings.TrimSuffix(r.partition, "*"), "default": strings.HasSuffix(r.partition, "*"), "available": r.avail, "time_limit": r.limit},
			"node":      map[string]any{"state": strings.ToUpper(r.longState)},
			"nodes":     map[string]any{"total": len(r.nodes), "nodes": r.nodes, "list": sbatch.HostList(r.nodes)},
			"cpus":      r.cpus, "memory": r.memoryMiB, "gres": r.gres,
			"reason": map[string]any{"description": r.reason, "user": r.reasonUser, "time": r.reasonTime},
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"sinfo": out})
}

// sinfoValue is one row's value for one format letter.
func sinfoValue(row sinfoRow, letter byte) string {
	switch letter {
	case 'P':
		return row.partition
	case 'R':
		return strings.TrimSuffix(row.partition, "*")
	case 's':
		return "1-infinite"
	case 'r':
		return "no"
	case 'h':
		return "NO"
	case 'g':
		return "all"
	case 'c':
		return strconv.FormatInt(row.cpus, 10)
	case 'z':
		return "1:1:1" // sockets:cores:threads are not reported by Kubernetes
	case 'm':
		return strconv.FormatInt(row.memoryMiB, 10)
	case 'd':
		return "0"
	case 'w':
		return "1"
	case 'f':
		return orNull(row.features)
	case 'Y':
		return orNull(row.topology)
	case 'F':
		return fmt.Sprintf("%d/%d/%d/%d", row.aiot[0], row.aiot[1], row.aiot[2], row.aiot[3])
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
		return sbatch.HostList(row.nodes)
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
