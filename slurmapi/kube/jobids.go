package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// counterKey is the ConfigMap key holding the next unreserved job id.
const counterKey = "next"

const (
	// LastJobID is the highest job id ever handed out: 2^31-1, because
	// Slurm's OpenAPI schemas (v0.0.41 to v0.0.45) declare job_id an int32,
	// and a client generated from them cannot read a larger one.
	LastJobID uint32 = 1<<31 - 1
	// DefaultMaxSlurmJobID is the highest id a Slurm job (a REST or CLI
	// submission, an array task) takes by default. The 2^24 ids above it
	// are kept for Kubernetes workloads, so that Slurm users who use up their
	// ids (ids are never reused: the ledger keys jobs by id) cannot stop the
	// pod grouper and the webhook from numbering manifest jobs.
	DefaultMaxSlurmJobID uint32 = LastJobID - 1<<24
)

// ErrJobIDsUsedUp is what errors.Is finds in the error of a counter with no
// id left under the ceiling asked for (IDsUsedUpError).
var ErrJobIDsUsedUp = errors.New("job ids used up")

// IDsUsedUpError says that no id is left at or below Ceiling. It is final,
// not a fault of the API server: ids only ever move on.
type IDsUsedUpError struct {
	Counter client.ObjectKey
	// Ceiling is the highest id the caller may take: the Slurm jobs'
	// (Slurm true) or LastJobID.
	Ceiling uint32
	Slurm   bool
}

func (e *IDsUsedUpError) Error() string {
	if e.Slurm {
		return fmt.Sprintf("job id counter %s: the ids of Slurm jobs are used up (the highest, %d, is taken; the ids above are kept for Kubernetes workloads)", e.Counter, e.Ceiling)
	}
	return fmt.Sprintf("job id counter %s: every job id up to %d is taken", e.Counter, e.Ceiling)
}

// Is makes errors.Is(err, ErrJobIDsUsedUp) hold.
func (e *IDsUsedUpError) Is(target error) bool { return target == ErrJobIDsUsedUp }

// JobIDsUsedUp lets packages that may not import this one (the pod grouper)
// tell this error from a passing fault with errors.As and an interface.
func (e *IDsUsedUpError) JobIDsUsedUp() bool { return true }

// JobIDs hands out job ids from a counter in a ConfigMap. Ids are reserved
// in blocks with an optimistic-concurrency update (resourceVersion), so a
// submission costs no extra API write except once per block, several
// servers never hand out the same id, and an id once returned is never
// reused after a restart (the unused rest of a block is skipped, leaving a
// gap, as Slurm's own ids may have).
//
// Slurm jobs take ids up to a ceiling (NextSlurm), Kubernetes workloads up
// to LastJobID (Next): the ids between are a reserve no Slurm user can
// spend.
type JobIDs struct {
	c         client.Client
	key       client.ObjectKey
	block     uint32
	maxSlurm  uint32
	floor     func(context.Context) (uint32, error)
	mu        sync.Mutex
	next, end uint32
}

// StartAbove makes a counter that has to be created anew (first install,
// a reinstall, a local rig restarted on its old ledger) start above the
// id floor returns: the ledger's highest id, so that a job id never names
// two different jobs in sacct. A counter that exists is only ever moved on.
func (j *JobIDs) StartAbove(floor func(context.Context) (uint32, error)) { j.floor = floor }

// LimitSlurm sets the highest id NextSlurm hands out (rest.maxJobId); 0 or
// more than LastJobID means DefaultMaxSlurmJobID.
func (j *JobIDs) LimitSlurm(maxID uint32) {
	if maxID == 0 || maxID > LastJobID {
		maxID = DefaultMaxSlurmJobID
	}
	j.maxSlurm = maxID
}

// MaxSlurm is the highest id NextSlurm hands out: Slurm's MaxJobId.
func (j *JobIDs) MaxSlurm() uint32 { return j.maxSlurm }

// NewJobIDs counts in ConfigMap namespace/name, reserving block ids at a time.
func NewJobIDs(c client.Client, namespace, name string, block uint32) *JobIDs {
	return &JobIDs{c: c, key: client.ObjectKey{Namespace: namespace, Name: name}, block: max(block, 1), maxSlurm: DefaultMaxSlurmJobID}
}

// Next returns a fresh job id for a Kubernetes workload: any id up to
// LastJobID, the reserve above the Slurm jobs' ceiling included.
func (j *JobIDs) Next(ctx context.Context) (uint32, error) { return j.take(ctx, 1, LastJobID) }

// NextSlurm returns the first of n consecutive fresh ids for Slurm jobs (a
// submission, the tasks an array splits off at once), all at or below the
// Slurm ceiling; past it, an error errors.Is finds ErrJobIDsUsedUp in.
func (j *JobIDs) NextSlurm(ctx context.Context, n uint32) (uint32, error) {
	return j.take(ctx, max(n, 1), j.maxSlurm)
}

// take hands out n consecutive ids, the last at most ceiling.
func (j *JobIDs) take(ctx context.Context, n, ceiling uint32) (uint32, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	// The stored counter is at or past j.end, so ids past the ceiling here
	// are past it in any block still to be reserved: refuse without a write.
	if uint64(j.next)+uint64(n)-1 > uint64(ceiling) {
		return 0, j.usedUp(ceiling)
	}
	if j.end-j.next < n {
		start, size, err := j.reserve(ctx, n, ceiling)
		if err != nil {
			return 0, err
		}
		j.next, j.end = start, start+size
	}
	id := j.next
	j.next += n
	return id, nil
}

func (j *JobIDs) usedUp(ceiling uint32) error {
	return &IDsUsedUpError{Counter: j.key, Ceiling: ceiling, Slurm: ceiling < LastJobID}
}

// blockFrom is how many ids a reservation starting at start takes: a block
// (n at least), cut at LastJobID.
func (j *JobIDs) blockFrom(start uint64, n uint32) uint32 {
	return uint32(min(uint64(max(j.block, n)), uint64(LastJobID)+1-start))
}

// reserve moves the stored counter a block on, the first n ids of which
// are at most ceiling, and returns the block; it retries when another
// server moved the counter first. It writes nothing when those n ids would
// pass the ceiling.
func (j *JobIDs) reserve(ctx context.Context, n, ceiling uint32) (start, size uint32, err error) {
	for attempt := 0; attempt < 20; attempt++ {
		var cm corev1.ConfigMap
		err := j.c.Get(ctx, j.key, &cm)
		if apierrors.IsNotFound(err) {
			first, err := j.firstID(ctx)
			if err != nil {
				return 0, 0, err
			}
			if first+uint64(n)-1 > uint64(ceiling) {
				return 0, 0, j.usedUp(ceiling)
			}
			size := j.blockFrom(first, n)
			cm = corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: j.key.Namespace, Name: j.key.Name},
				Data:       map[string]string{counterKey: strconv.FormatUint(first+uint64(size), 10)},
			}
			if err := j.c.Create(ctx, &cm); err == nil {
				return uint32(first), size, nil
			} else if !apierrors.IsAlreadyExists(err) {
				return 0, 0, fmt.Errorf("create job id counter: %w", err)
			}
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read job id counter: %w", err)
		}
		// A counter past LastJobID has every id taken (one written before
		// ids were kept to int32 may hold up to 2^32-1): used up, not corrupt.
		next, err := strconv.ParseUint(cm.Data[counterKey], 10, 32)
		if err != nil || next == 0 {
			return 0, 0, fmt.Errorf("job id counter %s holds %q, not a usable id", j.key, cm.Data[counterKey])
		}
		if next+uint64(n)-1 > uint64(ceiling) {
			return 0, 0, j.usedUp(ceiling)
		}
		size := j.blockFrom(next, n)
		cm.Data[counterKey] = strconv.FormatUint(next+uint64(size), 10)
		err = j.c.Update(ctx, &cm) // carries resourceVersion: fails if moved meanwhile
		if err == nil {
			return uint32(next), size, nil
		}
		if !apierrors.IsConflict(err) {
			return 0, 0, fmt.Errorf("reserve job ids: %w", err)
		}
	}
	return 0, 0, fmt.Errorf("reserve job ids: counter %s kept changing", j.key)
}

// firstID is where a new counter starts: 1, or above the floor.
func (j *JobIDs) firstID(ctx context.Context) (uint64, error) {
	if j.floor == nil {
		return 1, nil
	}
	highest, err := j.floor(ctx)
	if err != nil {
		return 0, fmt.Errorf("job id counter %s is new and the highest id already used is unknown: %w", j.key, err)
	}
	return uint64(highest) + 1, nil
}
