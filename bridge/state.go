package bridge

import "time"

// cycle is the working state of one Schedule call. Everything is indexed by int32 into flat
// slices so that the hot path (fit checks, apply and roll back) touches no maps and
// allocates nothing.
type cycle struct {
	s   *Snapshot
	d   *Decisions
	now int64 // the snapshot's Now in unix nanoseconds

	parts   []partState
	partIdx map[string]int32
	nodes   []nodeState
	nodeIdx map[string]int32
	gpus    []gpuState
	// resvs are the advance reservations that have not ended; resvIdx maps a name to its
	// index plus one.
	resvs    []resvState
	resvIdx  map[string]int32
	queues   []queueState
	queueIdx map[string]int32
	roots    []int32
	// qp holds each queue's state per partition at [queue*len(parts)+partition].
	qp     []queuePart
	qos    []qosState
	qosIdx map[string]int32
	jobs   []jobState
	groups []groupReq
	places []placement
	// gpuRefs holds, for every placement, the positions in gpus of its devices.
	gpuRefs []int32
	users   map[userKey]*userUsage
	extIdx  map[string]int32
	// sets are the snapshot's node sets, levels the topology levels jobs asked for.
	sets     []nodeSetState
	setIdx   map[string]int32
	levels   []levelState
	levelIdx map[string]int32
	scores   []scoreState // the snapshot's node scores (placement_score.go)
	scoreIdx map[string]int32
	best     scored // the best node of the scored search under way
	// sels are the selectors of affinity and spread rules, each at its level
	// (placement_affinity.go).
	sels    []selState
	selIdx  map[string]int32
	spread  spreadCounts // the last count of a job's tasks per domain (placement_spread.go)
	applies int64        // placements applied or taken away so far, for spread's cache
	// order is every pending job in the order allocate considered it.
	order []int32
	// victims caches, per partition, its running preemptible jobs in eviction order;
	// onNode lists, per node, the placements running at the start of rescue.
	victims [][]victimQueue
	onNode  [][]int32
	// giving is scratch for the victim queues one reclaim or preemption walks; lowerView
	// for the part of a queue a preemption may take.
	lowerView victimQueue
	giving    []*victimQueue
	holds     []victimHold // backing store for every victimQueue.held
	holdsAt   []int32      // and for every victimQueue.heldAt
	belows    []vec        // and for every victimQueue.below
	// victimPos is, per job, 1 + its position in its sorted victim queue while below counts
	// it; 0 otherwise.
	victimPos []int32
	// jobsByID is set when the snapshot lists its jobs in id order: a job's position then
	// orders it by id.
	jobsByID bool
	// gain, gained, pairs and touched are scratch for evictOnOneNode.
	gain    []vec
	gained  []bool
	pairs   []nodeVictim
	touched []int32
	// freed lists, in order, the nodes where committed evictions added free capacity since
	// allocate ran (a node again each time): the only places a job that did not fit then
	// may fit now without evicting anything. freedSeen remembers per gang shape how far a
	// failed scan got, so the next job of that shape looks only at newer entries.
	freed      []int32
	freedStamp []int
	freedSeen  map[int32][]failure
	scratch    attempt
	reasons    map[limitKey]string
	// interned numbers the shape keys of the cycle; keyBuf is where a key is built.
	interned map[string]int32
	keyBuf   []byte
	buf      *buffers
	// building is set while the snapshot's running work is applied: bucket order then must
	// not depend on the order jobs were listed in.
	building bool
	binds    []bindRef // committed placements to report as binds
	// carry is what the Scheduler keeps of running tasks between cycles (carry.go);
	// unlisted is set when a running task took devices it did not list.
	carry    *carry
	unlisted bool
	// orphanRunning names the running tasks that got no placement (an unknown node or
	// group), which device Taken lists may still name.
	orphanRunning []string
}

// buffers are the big per-cycle arrays, kept by a Scheduler from one cycle to the next so
// that a cycle over 140k pods does not hand the garbage collector 60 MB each time.
type buffers struct {
	jobs    []jobState
	groups  []groupReq
	places  []placement
	gpuRefs []int32
	lists   []int32
	// taskCounts is scratch for buildJobs: each job's well-formed tasks.
	taskCounts []int32
	nodes      []nodeState
	gpus       []gpuState
	nodeIdx    map[string]int32
	holds      []victimHold
	holdsAt    []int32
	belows     []vec
	victimPos  []int32
	binds      []bindRef
	// victimKeys and pendingKeys are scratch for sorting one queue's victims or pending jobs.
	victimKeys  []victimKey
	pendingKeys []pendingKey
	carry       carry
}

// keep takes back the cycle's arrays (they may have grown) for the next cycle.
func (b *buffers) keep(c *cycle) {
	b.jobs, b.groups = c.jobs, c.groups
	b.places, b.gpuRefs = b.carry.endCycle(c)
	b.nodes, b.gpus, b.nodeIdx = c.nodes, c.gpus, c.nodeIdx
	b.holds, b.holdsAt, b.belows, b.binds = c.holds, c.holdsAt, c.belows, c.binds
}

// room returns an empty slice with room for n, buf's array when it is large enough; for
// arrays filled by append, whose old contents need no clearing.
func room[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, 0, n)
	}
	return buf[:0]
}

// reuse returns a zeroed slice of length n, in buf's array when it is large enough.
func reuse[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

type partState struct {
	name      string
	src       int32 // its position in the snapshot's Partitions
	strategy  Strategy
	allowQ    map[string]bool
	allowQOS  map[string]bool
	nodes     []int32
	capacity  vec // schedulable nodes, healthy GPUs
	free      vec // the same nodes, now
	maxGPUs   int32
	maxGPUMem int64
	// whole buckets schedulable nodes by how many devices are entirely free; room buckets
	// nodes with a shared device by its largest free portion, in tenths.
	whole bucketSet
	room  bucketSet
	// pending is this partition's pending work per leaf queue, each in job order.
	pending []leafPending
	// reservedBy is the job holding nodes for backfill, -1 when none; reservedUntil is when
	// those nodes are expected to be free (zero: unknown).
	reservedBy    int32
	reservedUntil int64 // unix nanoseconds
	// noFit remembers, per gang shape, the CPU and memory sizes that failed, with the
	// reason, for the rest of allocate: free capacity only shrinks there, so a gang of the
	// same shape asking at least as much cannot fit either.
	noFit map[int32][]failure
	// consolidations counts the gangs that tried consolidation this cycle.
	consolidations int
}

type leafPending struct {
	queue int32
	jobs  []int32
	next  int
}

type failure struct {
	cpu, mem     int64
	code, reason string
	upTo         int // for freedSeen: entries of cycle.freed already scanned
}

type nodeState struct {
	name        string
	part        int32
	labels      map[string]string
	schedulable bool
	mig         bool
	free        vec
	ext         []int64
	g0, gn      int32 // its devices in cycle.gpus, by index
	freeWhole   int32
	maxRoom     int32 // largest free portion of a shared device, 0 when none
	capWhole    int32 // healthy devices
	capacity    vec
	reservedBy  int32
	resv        []int32 // the advance reservations holding it, in cycle.resvs
	// tasks counts the placements on it; exclusive is the exclusive job holding it (-1:
	// none), with exclTasks of its tasks there.
	tasks     int32
	exclusive int32
	exclTasks int32
	// busyUntil is when the work on it should end by its time limits; busyForever is set
	// when some of it has no limit.
	busyUntil   int64 // unix nanoseconds
	busyForever bool
}

type gpuState struct {
	index     int32
	uuid      string
	mem       int64
	unhealthy bool
	mig       bool
	whole     bool // taken by a whole-device task
	milli     int32
	usedMem   int64
	sharers   int32
	releasing bool // held for sharers that are gone: free to plan on, binds onto it wait (GPUTaken.Hold)
}

// roomMilli is the portion still free on a device that may be shared, -1 when it may not.
func (g *gpuState) roomMilli() int32 {
	if g.unhealthy || g.mig || g.whole {
		return -1
	}
	return 1000 - g.milli
}

func (g *gpuState) entirelyFree() bool {
	return !g.unhealthy && !g.whole && g.sharers == 0
}

type queueState struct {
	name     string
	parent   int32
	children []int32
	priority int32
	path     []int32 // from its root down to itself
	quotas   []PartitionQuota
}

// queuePart is one queue's standing in one partition.
type queuePart struct {
	quota, limit vec
	weight       [numDims]float64
	usage        vec // decayed history
	alloc        vec
	nonPreempt   vec // the part of alloc that may not be evicted
	request      vec
	fair         vec
	ratio        float64 // dominant alloc/fair over shareDims
}

type qosState struct {
	q   *QOS
	use vec // group usage
}

type userKey struct {
	qos  int32
	user string
}

type userUsage struct {
	gpu  int64
	jobs int32
}

type jobState struct {
	// The fields eviction reads for every victim it looks at come first, so that looking
	// at one reads the first two of its three cache lines (it is 192 bytes), not all four.
	evicted bool
	grew    bool // got new tasks this cycle: not a victim, its binds stand
	preempt bool
	listed  bool  // waiting in its partition's pending lists
	queue   int32 // -1: unknown
	part    int32 // -1: unknown
	qos     int32 // -1: none
	prio    int64
	use     vec     // what its live placements hold
	places  []int32 // live placements
	running int32   // tasks running at cycle start
	pending int32   // tasks not yet placed

	job       *Job
	g0, gn    int32 // its groups in cycle.groups
	minMember int32
	shape     int32  // interned shapeOf, set while it is listed
	need      vec    // estimated demand of its pending tasks
	code      string // why it is pending ("" when placed or never tried)
	reason    string
	start     int64 // earliest task start, unix nanoseconds; 0: unknown
	uu        *userUsage
	topo      *jobTopo        // nil: no topology asked for
	aff       *jobAffinity    // nil: no affinity rule, and no selector matches it
	perNode   map[int32]int32 // a large one-per-node job's live tasks per node; nil: walk places
	alts      *jobAlts        // nil: one way to run (alternatives.go)
	// onePerNode and exclusive are the job's Placement flags; constrained is set when it
	// has either or a topology.
	onePerNode  bool
	exclusive   bool
	constrained bool
	// resv is the advance reservation it asked for, its index in cycle.resvs plus one;
	// 0: none.
	resv int32
}

type groupReq struct {
	name    string
	base    vec // CPU and memory per task
	ext     []extAmount
	gpu     GPURequest
	count   int32
	running int32
	bound   int32 // tasks placed this cycle
	// malformed is set when checkGroup finds fault with it: its tasks take no devices.
	malformed bool
	names     []string
	set       int32 // its node set in cycle.sets, -1: any node
	score     int32 // its node score in cycle.scores, -1: none
}

type extAmount struct {
	idx int32
	v   int64
}

type placement struct {
	job    int32
	group  int32
	node   int32
	g0, gn int32 // into cycle.gpuRefs
	whole  bool
	milli  int32 // per device
	mem    int64 // per device
	use    vec
	task   string
	start  int64 // unix nanoseconds; 0: unknown
	live   bool
	action Action
	fresh  bool // made this cycle
}

// nanos is a time in unix nanoseconds, 0 for the zero time; int64 keeps per-task state
// small and free of pointers.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func (c *cycle) qpart(q, p int32) *queuePart { return &c.qp[int(q)*len(c.parts)+int(p)] }

func (c *cycle) problem(object, msg string) {
	c.d.Problems = append(c.d.Problems, Problem{Object: object, Message: msg})
}
