// Package bridge is Sluice's scheduling core: hierarchical fair share, gang scheduling and
// fractional-GPU placement over a plain snapshot of the cluster. It imports only the standard
// library and knows nothing of Kubernetes; the k8sscheduler adapter builds a Snapshot from its
// informer caches every cycle and carries out the Decisions.
//
// # The model
//
// Resources are a fixed vector (GPU in thousandths of a device, GPU memory in MiB, CPU in
// millicores, memory in bytes) plus named extended resources. A Partition is a pool of nodes
// with its own fair share and a placement strategy (binpack or spread). A Node carries its
// allocatable, a schedulable flag and each GPU as its own object: index, UUID, memory, model,
// health, MIG mode and what is already taken on it. Queues form a tree (departments over
// accounts); each has, per partition and per resource, a deserved quota, a limit and an
// over-quota weight, and a priority. Only leaves take jobs. A QOS adds priority,
// preemptibility and limits (GPUs and jobs per user, group TRES, maximum wall time).
//
// A Job is a gang: task groups, each with a count, a per-task request and how it asks for
// GPUs (whole devices, a fraction of one device, an amount of GPU memory, or the same
// fraction on N devices of one node), a minMember, and the tasks already running with their
// placements. Decayed historical usage per queue comes from the accounting ledger.
//
// # The cycle
//
// Schedule (or Scheduler.Schedule, which reuses memory between cycles) runs these steps. The
// result depends only on the snapshot: no clock (Snapshot.Now), no map order, not the order
// the snapshot lists things in.
//
//  1. Build: index nodes by partition and bucket them by free devices and by the largest free
//     portion of a shared device; apply every running task to nodes, devices, queues, QOS.
//  2. Stale gangs: a gang running below minMember for longer than its grace is evicted.
//  3. Fair share, per partition, top-down: each level gives its children their deserved quota
//     (capped by demand and limit, scaled down together if quotas exceed what the level has),
//     then hands the rest out over quota in strict priority bands, by weight corrected for
//     recent usage (KAI's k term), until nothing anyone wants is left.
//  4. Allocate, per partition: repeatedly serve the leaf queue that comes first (comparing the
//     two ancestors where their paths part: under fair share first, then priority, then the
//     smaller dominant share), taking its jobs by priority (with aging), then submit time. A
//     job must pass its limits (QOS, queue limits along its path, deserved quota for
//     non-preemptible work); then its gang is placed all or nothing. The first blocked gang
//     of more than one GPU holds the nodes it will get (a backfill reservation): other jobs may
//     use them only if their time limit ends before those nodes free up. A job of several
//     alternatives (partitions and node sets, alternatives.go) waits in each partition it
//     lists and starts in the first listed alternative that can start.
//  5. Rescue, for jobs blocked for capacity, in the same order: capacity freed by earlier
//     evictions; consolidation for whole-GPU gangs (move preemptible jobs so the gang fits,
//     commit only if every moved job lands again); reclaim (take preemptible work from queues over their fair share,
//     never pushing them below it nor the reclaimer above its own, so evictions cannot
//     ping-pong); preemption (lower-priority preemptible work of the same queue).
//  6. Report: binds, evictions, a pending reason for every waiting job (a Slurm-like code such
//     as Resources, AssocGrpGRES or QOSMaxGRESPerUser, and one line for the user), each queue's
//     deserved, fair, allocated and requested resources, reservations and input problems.
//
// Placement binpacks or spreads at node level and at device level. Fractions share a device
// only with fractions (the portions and the memory on it never exceed it); MIG nodes take no
// fractions; unhealthy devices and unschedulable nodes take nothing.
//
// Evictions are targeted: for a one-task job the core sums, per node, what the allowed
// victims hold there and empties only the first node where that is enough; victims evicted on
// the way but not needed in the end are spared.
//
// Work per cycle is bounded so that a cycle stays fast when thousands of jobs wait: failures
// are remembered per gang shape (a larger ask of the same shape fails too), a failed rescue is
// not retried for the same queue and GPU ask, one attempt evicts at most 64 jobs and looks at
// most at 512 running jobs and 8 nodes, and at most Config.MaxConsolidations gangs try
// consolidation per partition. Running preemptible jobs are indexed per queue, and a queue's
// are put in eviction order (with a copy of what each holds where) only when a rescue first
// walks them. Sorts read keys copied out of the jobs; when the snapshot lists its jobs by id,
// a job's position stands for its id. A Scheduler reuses its large arrays from cycle to cycle
// and carries each unchanged job's resolved running tasks over (carry.go).
package bridge
