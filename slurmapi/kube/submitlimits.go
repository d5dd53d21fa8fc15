package kube

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Slurm's MaxSubmitJobs: a user may have at most so many jobs pending or
// running in an account (the Queue's maxSubmitJobs) or with a QOS (its
// maxSubmitJobsPerUser); each array task counts. slurmctld counts in
// memory; here the counts come from one list of the jobs, kept current by
// the server's own submissions and listed again every countsRefresh in the
// background (so a job that ended frees its slot within that time). A
// submission is checked and counted in one step before it takes an id.
// With several replicas each counts its own submissions between lists, so
// together they may pass a limit by what the others took since the last.
// Nothing is counted, or listed, while the site sets no limit.

// countsRefresh is how often the counts are listed again.
const countsRefresh = 10 * time.Second

type countKey struct{ user, account, qos string } // one of account, qos set

type submitCounts struct {
	list func(ctx context.Context) ([]v1alpha1.PodGroup, error)

	load sync.Mutex // one list at a time

	mu         sync.Mutex
	counts     map[countKey]int // nil until the first list
	since      map[countKey]int // counted since the last list began
	listedAt   time.Time
	refreshing bool
}

// reserve counts d's tasks against its account's and QOS's limits, or
// refuses it; release takes them back when the submission then fails.
func (s *submitCounts) reserve(ctx context.Context, cat *slurmapi.Catalog, d *slurmapi.JobDesc) (release func(), err error) {
	keys, limits := limitsOf(cat, d)
	if len(keys) == 0 {
		return func() {}, nil
	}
	if err := s.ensureLoaded(ctx); err != nil {
		return nil, err
	}
	n := tasksOf(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range keys {
		if have := s.counts[k]; have+n > limits[i] {
			return nil, submitLimitRefusal(k, have, n, limits[i])
		}
	}
	for _, k := range keys {
		s.counts[k] += n
		s.since[k] += n
	}
	if time.Since(s.listedAt) > countsRefresh && !s.refreshing {
		s.refreshing = true
		go s.refresh(context.Background())
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, k := range keys {
			s.counts[k] -= n
			s.since[k] -= n
		}
	}, nil
}

// limitsOf are the limits that apply to d, with the count each is on.
func limitsOf(cat *slurmapi.Catalog, d *slurmapi.JobDesc) ([]countKey, []int) {
	var keys []countKey
	var limits []int
	if a := cat.Accounts[d.Account]; a != nil && a.MaxSubmitJobs > 0 {
		keys, limits = append(keys, countKey{user: d.User, account: d.Account}), append(limits, a.MaxSubmitJobs)
	}
	if q := cat.QOS[d.QOS]; q != nil && q.MaxSubmitJobsPerUser > 0 {
		keys, limits = append(keys, countKey{user: d.User, qos: d.QOS}), append(limits, q.MaxSubmitJobsPerUser)
	}
	return keys, limits
}

func submitLimitRefusal(k countKey, have, n, limit int) *slurmapi.Error {
	what, name, field := "account", k.account, "MaxSubmitJobs"
	if k.qos != "" {
		what, name, field = "QOS", k.qos, "MaxSubmitJobsPerUser"
	}
	return slurmapi.BadRequest(slurmapi.ErrAccountingPolicy, "job", "user %s has %d jobs pending or running with %s %s and this submission adds %d; %s there is %d",
		k.user, have, what, name, n, field, limit)
}

// tasksOf is how many jobs d counts as: an array's tasks, else one.
func tasksOf(d *slurmapi.JobDesc) int {
	if a, err := sbatch.ParseArray(d.Array); d.Array != "" && err == nil {
		return a.Count()
	}
	return 1
}

func (s *submitCounts) ensureLoaded(ctx context.Context) error {
	s.mu.Lock()
	loaded := s.counts != nil
	s.mu.Unlock()
	if loaded {
		return nil
	}
	return s.refresh(ctx)
}

// refresh lists the jobs and counts them anew, keeping what was counted
// while the list ran (it may or may not be in the list: counted twice
// until the next list is the safe side).
func (s *submitCounts) refresh(ctx context.Context) error {
	s.load.Lock()
	defer s.load.Unlock()
	s.mu.Lock()
	if s.counts != nil && time.Since(s.listedAt) < countsRefresh && !s.refreshing {
		s.mu.Unlock()
		return nil // another caller listed meanwhile
	}
	started := map[countKey]int{}
	s.since = started
	s.mu.Unlock()
	pgs, err := s.list(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshing = false
	if err != nil {
		klog.FromContext(ctx).Info("counting jobs for MaxSubmitJobs failed; the counts stay as they were", "err", err)
		if s.counts == nil {
			s.since = nil
			return err
		}
		return nil
	}
	counts := activeCounts(pgs)
	for k, n := range s.since {
		counts[k] += n
	}
	s.counts, s.since, s.listedAt = counts, map[countKey]int{}, time.Now()
	return nil
}

// activeCounts counts the Slurm jobs not ended, per user and account and
// per user and QOS; an array's record counts its tasks not split off.
func activeCounts(pgs []v1alpha1.PodGroup) map[countKey]int {
	out := map[countKey]int{}
	for i := range pgs {
		pg := &pgs[i]
		s := pg.Spec.Slurm
		if s == nil || jobstate.PhaseFinal(pg.Status.Phase) {
			continue
		}
		n := 1
		if arrayRecord(pg) {
			if a, err := sbatch.ParseArray(pg.Annotations[ArrayPendingAnnotation]); err == nil {
				n = a.Count()
			}
		}
		out[countKey{user: s.User, account: pg.Spec.Queue}] += n
		if pg.Spec.QOS != "" {
			out[countKey{user: s.User, qos: pg.Spec.QOS}] += n
		}
	}
	return out
}
