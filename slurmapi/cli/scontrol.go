package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(Command{Name: "scontrol", Summary: "show and change jobs, nodes and partitions (like Slurm's scontrol)", Run: runScontrol, Flags: flagsOf(scontrolFlags)})
}

const scontrolUsage = `Usage: sluice scontrol [flags] COMMAND [ARGS]

Commands:
  show job [JOBID]              a job (or every job you may see), Key=Value
  show node [NAME]              a node (or every node)
  show partition [NAME]         a partition (or every partition)
  show reservation [NAME]       an advance reservation (or every reservation)
  show config                   the server's settings (ClusterName, MaxArraySize, ...)
  show hostnames [LIST]         a node list (default $SLURM_JOB_NODELIST), one name per line
  show hostlist NAMES           names (a,b or one per line) as a node list: h100-[0-3]
  ping                          whether the controller (the Sluice server) answers
  hold JOBID...                 keep pending jobs from starting
  release JOBID...              let held jobs start
  requeue JOBID...              return jobs to PENDING (run again later)
  requeuehold JOBID...          requeue and hold
  update JobId=N KEY=VALUE...   change a job: TimeLimit, Priority, Nice, Comment, JobName,
                                and while pending Partition, QOS, Dependency
  update NodeName=N State=DRAIN Reason=WHY
  update NodeName=N State=RESUME
                                drain a node (no new work; its jobs run on) or resume it
  create reservation ReservationName=R StartTime=now|now+2minutes|YYYY-MM-DDTHH:MM[:SS]
         Duration=TIME|EndTime=TIME Nodes=LIST|NodeCnt=N [PartitionName=P]
         Users=U,..|Accounts=A,.. [Flags=MAINT,IGNORE_JOBS,FLEX,DAILY,WEEKLY,PURGE_COMP,
         MAGNETIC,ANY_NODES,PART_NODES]
                                book nodes for a window (operators and administrators)
  update ReservationName=R KEY=VALUE...
                                change a reservation: StartTime, EndTime, Duration, Nodes,
                                NodeCnt, PartitionName, Users, Accounts, Flags (Users+=,
                                Users-=, Accounts+=, Accounts-=, Flags+=, Flags-= too)
  delete reservation NAME       remove a reservation

Flags:
`

// scontrolOpts are the values scontrolFlags binds its flags to.
type scontrolOpts struct {
	token           string
	oneLine, asJSON bool
}

// scontrolFlags builds scontrol's options apart from runScontrol, so docs/cli.md and its
// tests read the very flags the command parses.
func scontrolFlags() (*flag.FlagSet, *scontrolOpts) {
	fs := flag.NewFlagSet("scontrol", flag.ContinueOnError)
	o := &scontrolOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.BoolVar(&o.oneLine, "o", false, "one line per record; also --oneliner")
	fs.BoolVar(&o.oneLine, "oneliner", false, "one line per record")
	fs.BoolVar(&o.asJSON, "json", false, "show: print the records as JSON (the REST API's shape)")
	return fs, o
}

func runScontrol(args []string) error {
	fs, o := scontrolFlags()
	fs.Usage = func() {
		io.WriteString(fs.Output(), scontrolUsage)
		fs.PrintDefaults()
	}
	if help, err := ParseFlags(fs, args); help || err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return UsageError{"no command given (show, ping, hold, release, requeue, requeuehold, update, create, delete)"}
	}
	verb, rest := strings.ToLower(rest[0]), rest[1:]
	var act func(ctx context.Context, c *client.Client) error
	switch verb {
	case "show":
		if len(rest) == 0 {
			return UsageError{"show what? job, node, partition, reservation, config, hostnames or hostlist"}
		}
		what, name := strings.ToLower(rest[0]), ""
		if len(rest) > 1 {
			name = rest[1]
		}
		if len(rest) > 2 {
			return UsageError{fmt.Sprintf("show %s takes one name, got %q", what, rest[1:])}
		}
		if ok, err := scontrolHosts(os.Stdout, what, name); ok {
			return err // a host list needs no server
		}
		show := showOptions{oneLine: o.oneLine, json: o.asJSON, now: time.Now()}
		tok := o.token
		if tok == "" {
			tok = os.Getenv("SLURM_JWT")
		}
		if ok, err := inJobShowJob(os.Stdout, what, name, tok, show, os.Getenv); ok {
			return err // the job's own record, from its environment
		}
		act = func(ctx context.Context, c *client.Client) error {
			return scontrolShow(ctx, c, os.Stdout, what, name, show)
		}
	case "ping":
		act = func(ctx context.Context, c *client.Client) error { return scontrolPing(ctx, c, os.Stdout) }
	case "hold", "release", "requeue", "requeuehold":
		ids, err := scontrolJobIDs(rest)
		if err != nil {
			return err
		}
		act = func(ctx context.Context, c *client.Client) error { return scontrolJobAction(ctx, c, verb, ids) }
	case "create", "delete":
		var err error
		if act, err = scontrolReservationVerb(verb, rest); err != nil {
			return err
		}
	case "update":
		if isReservationUpdate(rest) {
			req, err := parseReservation(reservationArgs(rest), true, time.Now())
			if err != nil {
				return err
			}
			act = func(ctx context.Context, c *client.Client) error {
				return scontrolWriteReservation(ctx, c, os.Stdout, req, true)
			}
			break
		}
		if nodes, fields, isNode, err := parseNodeUpdate(rest); isNode {
			if err != nil {
				return err
			}
			act = func(ctx context.Context, c *client.Client) error { return scontrolUpdateNodes(ctx, c, nodes, fields) }
			break
		}
		id, fields, err := parseJobUpdate(rest)
		if err != nil {
			return err
		}
		act = func(ctx context.Context, c *client.Client) error {
			if err := c.Update(ctx, id, fields); err != nil {
				return jobError(id, err)
			}
			return nil
		}
	default:
		return UsageError{fmt.Sprintf("unknown command %q", verb)}
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	return act(ctx, c)
}

// showOptions are how `show` prints.
type showOptions struct {
	oneLine, json bool
	now           time.Time
}

// scontrolShow prints one or every job, node or partition. Unknown names
// fail with scontrol's own messages.
func scontrolShow(ctx context.Context, c *client.Client, w io.Writer, what, name string, o showOptions) error {
	if what != "" && strings.HasPrefix("config", what) {
		return scontrolShowConfig(ctx, c, w, o) // scontrol ignores a name after config
	}
	var records []record
	var value any
	var noun string // what "No ... in the system" names
	switch {
	case strings.HasPrefix("jobs", what) && what != "":
		jobs, err := showJobs(ctx, c, name)
		if err != nil {
			return err
		}
		value, noun = map[string]any{"jobs": jobs}, "jobs"
		for _, j := range jobs {
			records = append(records, jobRecord(j, o.now))
		}
	case strings.HasPrefix("nodes", what) && what != "":
		nodes, err := c.Nodes(ctx)
		if name != "" {
			var n client.Node
			n, err = c.Node(ctx, name)
			nodes = []client.Node{n}
		}
		if client.IsNotFound(err) {
			return fmt.Errorf("Node %s not found", name)
		} else if err != nil {
			return err
		}
		value, noun = map[string]any{"nodes": nodes}, "nodes"
		for _, n := range nodes {
			records = append(records, nodeRecord(n))
		}
	case strings.HasPrefix("partitions", what) && what != "":
		parts, err := c.Partitions(ctx)
		if name != "" {
			var p client.Partition
			p, err = c.Partition(ctx, name)
			parts = []client.Partition{p}
		}
		if client.IsNotFound(err) {
			return fmt.Errorf("Partition %s not found", name)
		} else if err != nil {
			return err
		}
		value, noun = map[string]any{"partitions": parts}, "partitions"
		for _, p := range parts {
			records = append(records, partitionRecord(p))
		}
	case strings.HasPrefix("reservations", what) && len(what) >= 3:
		list, err := showReservations(ctx, c, name)
		if err != nil {
			return err
		}
		value, noun = map[string]any{"reservations": list}, "reservations"
		for _, r := range list {
			records = append(records, reservationRecord(r, o.now))
		}
	default:
		return UsageError{fmt.Sprintf("show %q: want job, node, partition, reservation or config", what)}
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(value)
	}
	if len(records) == 0 {
		fmt.Fprintf(w, "No %s in the system\n", noun)
		return nil
	}
	for _, r := range records {
		r.write(w, o.oneLine)
	}
	return nil
}

// errInvalidJobID is scontrol's answer for a job that does not exist (or
// has left the cluster).
var errInvalidJobID = errors.New("slurm_load_jobs error: Invalid job id specified")

// showJobs reads one job (JOBID), an array task (JOBID_TASK), an array
// with its tasks, or every job the caller may see.
func showJobs(ctx context.Context, c *client.Client, name string) ([]client.Job, error) {
	if name == "" {
		return c.Jobs(ctx)
	}
	jobs, err := c.JobRecords(ctx, name)
	switch {
	case client.IsNotFound(err), client.IsBadRequest(err), err == nil && len(jobs) == 0:
		return nil, errInvalidJobID
	case client.IsForbidden(err):
		return nil, errors.New("slurm_load_jobs error: Access/permission denied")
	}
	return jobs, err
}

// scontrolJobIDs reads hold/release/requeue arguments: job ids, also
// comma-separated as scontrol takes them.
func scontrolJobIDs(args []string) ([]uint32, error) {
	var ids []uint32
	for _, a := range args {
		for _, s := range strings.Split(a, ",") {
			if s == "" {
				continue
			}
			id, err := strconv.ParseUint(s, 10, 32)
			if err != nil || id == 0 {
				return nil, UsageError{fmt.Sprintf("invalid job id %q", s)}
			}
			ids = append(ids, uint32(id))
		}
	}
	if len(ids) == 0 {
		return nil, UsageError{"no job id given"}
	}
	return ids, nil
}

// scontrolJobAction holds, releases or requeues each job, reporting each
// failure and failing if any did.
func scontrolJobAction(ctx context.Context, c *client.Client, verb string, ids []uint32) error {
	failed := 0
	for _, id := range ids {
		var err error
		switch verb {
		case "hold":
			err = c.Update(ctx, id, map[string]any{"hold": true})
		case "release":
			err = c.Update(ctx, id, map[string]any{"hold": false})
		case "requeue", "requeuehold":
			err = c.Requeue(ctx, id, verb == "requeuehold")
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "scontrol: %v\n", jobError(id, err))
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%s failed for %d of %d jobs", verb, failed, len(ids))
	}
	return nil
}

// jobError names the job in a failure, in scontrol's words for a job that
// does not exist.
func jobError(id uint32, err error) error {
	if client.IsNotFound(err) {
		return fmt.Errorf("Invalid job id specified for job %d", id)
	}
	return fmt.Errorf("job %d: %w", id, err)
}

// parseJobUpdate reads `update JobId=N Key=Value...` into a job_desc_msg
// for POST job/{job_id}. Keys are case-insensitive, as in scontrol.
func parseJobUpdate(args []string) (uint32, map[string]any, error) {
	var id uint32
	fields := map[string]any{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return 0, nil, UsageError{fmt.Sprintf("update: %q is not KEY=VALUE", a)}
		}
		switch strings.ToLower(k) {
		case "jobid":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n == 0 {
				return 0, nil, UsageError{fmt.Sprintf("update: invalid JobId %q", v)}
			}
			id = uint32(n)
		case "timelimit":
			d, err := sbatch.ParseTimeLimit(v)
			if err != nil {
				return 0, nil, UsageError{"update: " + err.Error()}
			}
			if d == sbatch.Unlimited {
				fields["time_limit"] = client.NoVal{Set: true, Infinite: true}
			} else {
				fields["time_limit"] = client.Set(int64(d / time.Minute))
			}
		case "priority":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, nil, UsageError{fmt.Sprintf("update: invalid Priority %q", v)}
			}
			fields["priority"] = client.Set(n)
		case "nice":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, nil, UsageError{fmt.Sprintf("update: invalid Nice %q", v)}
			}
			fields["nice"] = n
		case "comment":
			fields["comment"] = v
		case "jobname", "name":
			fields["name"] = v
		case "partition":
			fields["partition"] = v
		case "qos":
			fields["qos"] = v
		case "account":
			fields["account"] = v
		case "dependency":
			fields["dependency"] = v
		default:
			return 0, nil, UsageError{fmt.Sprintf("update: %s cannot be changed here (TimeLimit, Priority, Nice, Comment, JobName, Partition, QOS, Account, Dependency can)", k)}
		}
	}
	if id == 0 {
		return 0, nil, UsageError{"update: name the job with JobId=N"}
	}
	if len(fields) == 0 {
		return 0, nil, UsageError{"update: nothing to change (TimeLimit=, Priority=, Nice=, Comment=, JobName=, Partition=, QOS=, Dependency=)"}
	}
	return id, fields, nil
}

// parseNodeUpdate reads `update NodeName=N State=DRAIN Reason=WHY` (or
// State=RESUME) into an update_node_msg; isNode is false when the update
// names no node (a job update).
func parseNodeUpdate(args []string) (nodes []string, fields map[string]any, isNode bool, err error) {
	fields = map[string]any{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch strings.ToLower(k) {
		case "nodename", "node":
			isNode = true
			names, perr := sbatch.ParseNodeList(v)
			if perr != nil {
				err = UsageError{fmt.Sprintf("update: NodeName=%s: %v", v, perr)}
			}
			nodes = append(nodes, names...)
		case "state":
			fields["state"] = []string{strings.ToUpper(v)}
		case "reason":
			fields["reason"] = v
		default:
			err = UsageError{fmt.Sprintf("update: %s cannot be changed on a node here (State=DRAIN|RESUME and Reason= can)", k)}
		}
	}
	if !isNode {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, true, err
	}
	if len(nodes) == 0 || fields["state"] == nil {
		return nil, nil, true, UsageError{"update: give NodeName=NAME and State=DRAIN (with Reason=) or State=RESUME"}
	}
	if st := fields["state"].([]string)[0]; st == "DRAIN" && fields["reason"] == nil {
		// scontrol's own check, before anything is sent.
		return nil, nil, true, errors.New("You must specify a reason when DOWNING or DRAINING a node. Request denied")
	}
	return nodes, fields, true, nil
}

// scontrolUpdateNodes sends the update to each node, printing the
// server's warnings and failing if any node failed.
func scontrolUpdateNodes(ctx context.Context, c *client.Client, nodes []string, fields map[string]any) error {
	failed := 0
	for _, n := range nodes {
		warnings, err := c.UpdateNode(ctx, n, fields)
		for _, w := range warnings {
			fmt.Fprintln(os.Stderr, "scontrol: warning:", w)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "scontrol: error: node %s: %v\n", n, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("update failed for %d of %d nodes", failed, len(nodes))
	}
	return nil
}

// scontrolPing prints each controller's state as scontrol ping does
// ("Slurmctld(primary) at ctl is UP"), and fails when none is up.
func scontrolPing(ctx context.Context, c *client.Client, w io.Writer) error {
	pings, err := c.Ping(ctx)
	if err != nil {
		return err
	}
	up := false
	for _, p := range pings {
		mode := cmp.Or(p.Mode, "primary")
		fmt.Fprintf(w, "Slurmctld(%s) at %s is %s\n", mode, p.Hostname, p.Pinged)
		up = up || p.Pinged == "UP"
	}
	if !up {
		return fmt.Errorf("no controller is up")
	}
	return nil
}
