package slurmapi

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// resolve checks a job against the site's partitions, accounts and QOS,
// fills the defaults they give (default partition, the user's default
// account, the account's default QOS, the partition's default time and
// image) and refuses what Slurm would refuse at submission.
func (c *Catalog) resolve(d *JobDesc) *Error {
	if d.Partition == "" {
		d.Partition = c.DefaultPartition
	}
	if d.Partition == "" {
		return BadRequest(ErrInvalidPartition, "job.partition", "no partition given and the site has no default partition (known: %s)", names(c.Partitions))
	}
	list, e := partitionList(d.Partition)
	if e != nil {
		return e
	}
	if len(list) > 1 {
		return c.resolveList(d, list)
	}
	return c.resolveIn(d)
}

// resolveIn resolves a job of one partition, d.Partition.
func (c *Catalog) resolveIn(d *JobDesc) *Error {
	part, ok := c.Partitions[d.Partition]
	if !ok {
		return BadRequest(ErrInvalidPartition, "job.partition", "partition %q does not exist (known: %s)", d.Partition, names(c.Partitions))
	}
	if e := c.resolveAccount(d, part); e != nil {
		return e
	}
	if d.TimeLimit == sbatch.Unlimited && part.MaxTime > 0 {
		// No limit asked for (UNLIMITED, INFINITE, 0): the partition's
		// MaxTime, the longest the job may have there.
		d.TimeLimit = part.MaxTime
	}
	if e := c.resolveQOS(d, part); e != nil {
		return e
	}
	if d.GPUs.Type != "" && part.GPUType != "" && !gpuTypeMatches(d.GPUs.Type, part.GPUType) {
		return BadRequest(ErrInvalidGRES, "job.tres_per_node", "partition %q has %s GPUs, the job asks for %s", part.Name, part.GPUType, d.GPUs.Type)
	}
	if part.MaxNodesPerJob > 0 && d.Nodes > part.MaxNodesPerJob {
		return BadRequest(ErrInvalidNodeCount, "job.minimum_nodes", "partition %q allows at most %d nodes per job, the job asks for %d", part.Name, part.MaxNodesPerJob, d.Nodes)
	}
	part.spreadJobGPUs(d)
	d.NodesGiven = false // read by spreadJobGPUs only; a stored job does not keep it
	if e := part.checkNodes(d); e != nil {
		return e
	}
	if d.TimeLimit == 0 {
		d.TimeLimit = part.DefaultTime
	}
	if part.MaxTime > 0 && (d.TimeLimit == sbatch.Unlimited || d.TimeLimit > part.MaxTime) {
		return BadRequest(ErrInvalidTimeLimit, "job.time_limit", "time limit %s exceeds partition %q's maximum %s", sbatch.FormatTimeLimit(d.TimeLimit), part.Name, sbatch.FormatTimeLimit(part.MaxTime))
	}
	if d.ContainerImage == "" {
		d.ContainerImage = part.DefaultImage
	}
	return nil
}

func (c *Catalog) resolveAccount(d *JobDesc, part *Partition) *Error {
	if d.Account == "" {
		d.Account = c.defaultAccount(d.User)
	}
	if d.Account == "" {
		return BadRequest(ErrInvalidAccount, "job.account", "no account given and user %q has no default account", d.User)
	}
	if _, ok := c.Accounts[d.Account]; !ok {
		return BadRequest(ErrInvalidAccount, "job.account", "account %q does not exist", d.Account)
	}
	if !c.userInAccount(d.User, d.Account) {
		return BadRequest(ErrInvalidAccount, "job.account", "user %q is not associated with account %q (accounts: %s)", d.User, d.Account, strings.Join(c.UserAccounts[d.User], ", "))
	}
	if len(part.AllowAccounts) > 0 && !slices.Contains(part.AllowAccounts, d.Account) {
		return BadRequest(ErrInvalidAccount, "job.account", "partition %q does not allow account %q", part.Name, d.Account)
	}
	return nil
}

func (c *Catalog) resolveQOS(d *JobDesc, part *Partition) *Error {
	allowed, restricted := c.AccountQOS[d.Account]
	if d.QOS == "" {
		d.QOS = c.defaultQOS(d.Account)
	}
	if d.QOS == "" {
		return nil
	}
	q, ok := c.QOS[d.QOS]
	if !ok {
		return BadRequest(ErrInvalidQOS, "job.qos", "QOS %q does not exist (known: %s)", d.QOS, names(c.QOS))
	}
	if restricted && !slices.Contains(allowed, d.QOS) {
		return BadRequest(ErrInvalidQOS, "job.qos", "user %q in account %q may not use QOS %q (the association allows: %s)", d.User, d.Account, d.QOS, strings.Join(allowed, ", "))
	}
	if len(part.AllowQOS) > 0 && !slices.Contains(part.AllowQOS, d.QOS) {
		return BadRequest(ErrInvalidQOS, "job.qos", "partition %q does not allow QOS %q", part.Name, d.QOS)
	}
	if q.MaxWall > 0 && (d.TimeLimit == sbatch.Unlimited || d.TimeLimit > q.MaxWall) {
		return BadRequest(ErrAccountingPolicy, "job.time_limit", "time limit %s exceeds QOS %q's MaxWall %s", sbatch.FormatTimeLimit(d.TimeLimit), q.Name, sbatch.FormatTimeLimit(q.MaxWall))
	}
	if limit, ok := tresCount(q.MaxTRESPerUser, "gres/gpu"); ok {
		if n := d.GPUs.Total(d.Nodes, d.Tasks); int64(n) > limit {
			return BadRequest(ErrAccountingPolicy, "job.tres_per_node", "the job asks for %d GPUs, QOS %q allows %d per user (MaxTRESPerUser)", n, q.Name, limit)
		}
	}
	return nil
}

// tresCount reads one entry of a TRES string ("cpu=8,gres/gpu=16").
func tresCount(tres, name string) (int64, bool) {
	for _, item := range strings.Split(tres, ",") {
		if k, v, ok := strings.Cut(item, "="); ok && k == name {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func names[V any](m map[string]V) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
