package kube

import (
	"context"
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

// JobIDs hands out job ids from a counter in a ConfigMap. Ids are reserved
// in blocks with an optimistic-concurrency update (resourceVersion), so a
// submission costs no extra API write except once per block, several
// servers never hand out the same id, and an id once returned is never
// reused after a restart (the unused rest of a block is skipped, leaving a
// gap, as Slurm's own ids may have).
type JobIDs struct {
	c         client.Client
	key       client.ObjectKey
	block     uint32
	floor     func(context.Context) (uint32, error)
	mu        sync.Mutex
	next, end uint32
}

// StartAbove makes a counter that has to be created anew (first install,
// a reinstall, a local rig restarted on its old ledger) start above the
// id floor returns: the ledger's highest id, so that a job id never names
// two different jobs in sacct. A counter that exists is only ever moved on.
func (j *JobIDs) StartAbove(floor func(context.Context) (uint32, error)) { j.floor = floor }

// NewJobIDs counts in ConfigMap namespace/name, reserving block ids at a time.
func NewJobIDs(c client.Client, namespace, name string, block uint32) *JobIDs {
	return &JobIDs{c: c, key: client.ObjectKey{Namespace: namespace, Name: name}, block: max(block, 1)}
}

// Next returns a fresh job id.
func (j *JobIDs) Next(ctx context.Context) (uint32, error) { return j.NextN(ctx, 1) }

// NextN returns the first of n consecutive fresh job ids: an array job's
// id and its tasks' ids, reserved in one go so the tasks can be given
// theirs later without another counter write.
func (j *JobIDs) NextN(ctx context.Context, n uint32) (uint32, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.end-j.next < n {
		size := max(j.block, n)
		start, err := j.reserve(ctx, size)
		if err != nil {
			return 0, err
		}
		j.next, j.end = start, start+size
	}
	id := j.next
	j.next += n
	return id, nil
}

// reserve moves the stored counter size ids on and returns the first of
// them, retrying when another server moved it first.
func (j *JobIDs) reserve(ctx context.Context, size uint32) (uint32, error) {
	for attempt := 0; attempt < 20; attempt++ {
		var cm corev1.ConfigMap
		err := j.c.Get(ctx, j.key, &cm)
		if apierrors.IsNotFound(err) {
			first, err := j.firstID(ctx)
			if err != nil {
				return 0, err
			}
			cm = corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: j.key.Namespace, Name: j.key.Name},
				Data:       map[string]string{counterKey: strconv.FormatUint(uint64(first)+uint64(size), 10)},
			}
			if err := j.c.Create(ctx, &cm); err == nil {
				return first, nil
			} else if !apierrors.IsAlreadyExists(err) {
				return 0, fmt.Errorf("create job id counter: %w", err)
			}
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read job id counter: %w", err)
		}
		start, err := strconv.ParseUint(cm.Data[counterKey], 10, 32)
		if err != nil || start == 0 || start+uint64(size) > 1<<32-1 {
			return 0, fmt.Errorf("job id counter %s holds %q, not a usable id", j.key, cm.Data[counterKey])
		}
		cm.Data[counterKey] = strconv.FormatUint(start+uint64(size), 10)
		err = j.c.Update(ctx, &cm) // carries resourceVersion: fails if moved meanwhile
		if err == nil {
			return uint32(start), nil
		}
		if !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("reserve job ids: %w", err)
		}
	}
	return 0, fmt.Errorf("reserve job ids: counter %s kept changing", j.key)
}

// firstID is where a new counter starts: 1, or above the floor.
func (j *JobIDs) firstID(ctx context.Context) (uint32, error) {
	if j.floor == nil {
		return 1, nil
	}
	highest, err := j.floor(ctx)
	if err != nil {
		return 0, fmt.Errorf("job id counter %s is new and the highest id already used is unknown: %w", j.key, err)
	}
	if highest >= 1<<32-2 {
		return 0, fmt.Errorf("job id counter %s: ids are used up to %d", j.key, highest)
	}
	return highest + 1, nil
}
