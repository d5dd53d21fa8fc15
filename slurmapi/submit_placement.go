package slurmapi

import (
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// spreadJobFlag is job_desc_msg's flag for --spread-job.
const spreadJobFlag = "SPREAD_JOB"

// setPlacement reads what the job asks of its nodes: features (constraints,
// --constraint), the nodes it must use (required_nodes, --nodelist) or avoid
// (excluded_nodes, --exclude), whole nodes (shared ["none"], --exclusive) and at most
// one leaf switch (required_switches, --switches). Explicit REST fields win.
func setPlacement(d *JobDesc, in *jobDescIn, opts *sbatch.Options) *Error {
	d.Constraint = opts.Constraint
	if in.Constraints != nil && *in.Constraints != "" {
		d.Constraint = *in.Constraints
	}
	if d.Constraint != "" {
		if _, err := sbatch.ParseConstraintChoices(d.Constraint); err != nil {
			return BadRequest(ErrRestInvalidJobs, "job.constraints", "%v", err)
		}
	}
	var e *Error
	if d.NodeList, e = nodeList(in.RequiredNodes, opts.NodeList, "job.required_nodes"); e != nil {
		return e
	}
	if d.Exclude, e = nodeList(in.ExcludedNodes, opts.Exclude, "job.excluded_nodes"); e != nil {
		return e
	}
	excluded := make(map[string]bool, len(d.Exclude)) // lists of thousands: no n*m scan
	for _, n := range d.Exclude {
		excluded[n] = true
	}
	for _, n := range d.NodeList {
		if excluded[n] {
			return BadRequest(ErrInvalidNodeName, "job.excluded_nodes", "node %s is both required and excluded", n)
		}
	}
	// Slurm grows the node count to cover the required nodes; it would add other nodes
	// to reach a larger count, which Sluice cannot (the job may use only listed nodes).
	switch {
	case len(d.NodeList) > d.Nodes:
		d.Nodes = len(d.NodeList)
	case len(d.NodeList) > 0 && d.Nodes > len(d.NodeList):
		return BadRequest(ErrNotSupported, "job.required_nodes", "the job asks for %d nodes and lists %d: list every node it should use (Sluice does not add unlisted nodes to a node list)",
			d.Nodes, len(d.NodeList))
	}
	d.Exclusive = opts.Exclusive
	if in.Shared != nil {
		d.Exclusive = false
		for _, s := range in.Shared {
			switch s {
			case "none":
				d.Exclusive = true
			case "oversubscribe":
			default:
				return BadRequest(ErrNotSupported, "job.shared", "shared %q is not supported: use [\"none\"] for whole nodes (--exclusive)", s)
			}
		}
	}
	d.Switches = opts.Switches
	if n, ok := in.RequiredSwitches.Value(); ok {
		if n < 1 || n > maxCount {
			return BadRequest(ErrRestInvalidJobs, "job.required_switches", "required_switches must be between 1 and %d, got %d", maxCount, n)
		}
		d.Switches = int(n)
	}
	d.SwitchWait = opts.SwitchesWait
	d.SpreadJob = opts.SpreadJob
	for _, f := range in.Flags {
		if strings.EqualFold(f, spreadJobFlag) {
			d.SpreadJob = true // job_desc's form of --spread-job
		}
	}
	if s, ok := in.WaitForSwitch.Value(); ok {
		if s < 0 || s > maxWaitForSwitch {
			return BadRequest(ErrRestInvalidJobs, "job.wait_for_switch", "wait_for_switch must be between 0 and %d seconds, got %d", maxWaitForSwitch, s)
		}
		d.SwitchWait = time.Duration(s) * time.Second
	}
	return nil
}

// maxWaitForSwitch bounds wait_for_switch: a year, in seconds.
const maxWaitForSwitch = 366 * 24 * 3600

// nodeList expands the REST list when given, else the directive's.
func nodeList(rest csvString, directive, source string) ([]string, *Error) {
	raw := directive
	if len(rest) > 0 {
		raw = strings.Join(rest, ",")
	}
	if raw == "" {
		return nil, nil
	}
	names, err := sbatch.ParseNodeList(raw)
	if err != nil {
		return nil, BadRequest(ErrInvalidNodeName, source, "%v", err)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// spreadJobGPUs gives a job that asks for more GPUs in all (--gpus, tres_per_job) than the
// partition's largest node has, and states no node count, as many nodes as it needs, as
// Slurm spreads such a job. Every node gets the same share, so the count grows until the
// GPUs divide evenly. Without knowledge of the partition's nodes nothing changes.
func (p *Partition) spreadJobGPUs(d *JobDesc) {
	if d.SpreadJob && !d.NodesGiven && len(d.NodeList) == 0 && p.NodesKnown {
		p.spreadWide(d)
		return
	}
	if d.GPUs.PerJob == 0 || d.NodesGiven || len(d.NodeList) > 0 || !p.NodesKnown {
		return
	}
	largest := int64(0)
	for _, s := range p.NodeSizes {
		largest = max(largest, s.GPUs)
	}
	total := int64(d.GPUs.PerJob)
	if largest == 0 || total <= largest {
		return
	}
	n := (total + largest - 1) / largest
	for total%n != 0 {
		n++
	}
	d.Nodes = int(n)
	if d.Tasks < d.Nodes {
		d.Tasks = d.Nodes
	}
}

// spreadWide is --spread-job: the job's GPUs (--gpus), else its tasks, go on as many nodes
// of the partition as they divide evenly over, one node each at most, as Slurm spreads
// such a job over as many nodes as possible.
func (p *Partition) spreadWide(d *JobDesc) {
	total := int(d.GPUs.PerJob)
	if total == 0 {
		total = d.Tasks
	}
	most := p.NodeCount
	if p.MaxNodesPerJob > 0 {
		most = min(most, p.MaxNodesPerJob)
	}
	n := min(total, most)
	for n > 1 && total%n != 0 {
		n--
	}
	d.Nodes = max(n, 1)
	if d.Tasks < d.Nodes {
		d.Tasks = d.Nodes
	}
}
