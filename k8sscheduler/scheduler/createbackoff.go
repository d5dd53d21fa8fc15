package scheduler

import (
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A Slurm job whose pods could not be created (a ResourceQuota that refuses them, an
// admission policy, a pod name still taken, the API server away) waits before it is
// placed again, doubling from firstCreateBackoff to maxCreateBackoff: placed again at
// once, it was retried every cycle, dozens of times a second, with an Event each time,
// and held the GPUs it was placed on from every other job. A create that succeeds
// resets the wait.
const (
	firstCreateBackoff = time.Second
	maxCreateBackoff   = time.Minute
)

// createRetry is a job's wait after failed creates: how long (doubling with each
// failure), until when, and why.
type createRetry struct {
	backoff time.Duration
	at      time.Time
	failure string
}

// nextCreateBackoff is the wait after a failure that followed a wait of prev.
func nextCreateBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return firstCreateBackoff
	}
	return min(2*prev, maxCreateBackoff)
}

// backOffCreate records a failed create at now and returns how long the job now waits.
// The caller holds the cache lock.
func (g *groupEntry) backOffCreate(err error, now time.Time) time.Duration {
	if g.retry == nil {
		g.retry = &createRetry{}
	}
	r := g.retry
	r.backoff = nextCreateBackoff(r.backoff)
	r.at, r.failure = now.Add(r.backoff), err.Error()
	return r.backoff
}

// waitsToRetryCreate blocks a job whose last create failed until its wait is over,
// saying why; the timer createFailed started marks it dirty again then.
func (g *groupEntry) waitsToRetryCreate(now time.Time) bool {
	r := g.retry
	if r == nil || !now.Before(r.at) {
		return false
	}
	g.block(v1alpha1.ReasonPodCreateFailed, "creating the job's pods failed: %s; trying again %s after the failure",
		r.failure, r.backoff)
	return true
}
