package recorder

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// cpuTime is the CPU this process has used: on a machine shared with other builds, wall
// time also counts waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecorderIngest is the recorder's whole write path: 250 Slurm jobs whose two
// pods ran and succeeded are seen by the informer handlers, derived and written to a
// SQLite ledger in one flush (3 transitions each: PENDING, RUNNING, COMPLETED). Target:
// >= 5000 job transitions/s. Run with -short, so no rig is started:
//
//	go test -short -run XXX -bench RecorderIngest ./accounting/recorder/
func BenchmarkRecorderIngest(b *testing.B) {
	two := map[string]string{v1alpha1.GPUAssignmentAnnotation: `{"gpus":[{"index":0},{"index":1}],"portion":1}`}
	benchIngest(b, func(id string) ([]*v1alpha1.PodGroup, []*corev1.Pod) {
		pg := slurmGroup(id, nil)
		pg.UID = types.UID("uid-" + id)
		var pods []*corev1.Pod
		for i, node := range []string{"n1", "n2"} {
			p := pod(fmt.Sprintf("job-%s-%d", id, i), node, 5, corev1.PodSucceeded, 0, 65, two)
			p.Annotations[v1alpha1.PodGroupAnnotation] = pg.Name
			pods = append(pods, p)
		}
		return []*v1alpha1.PodGroup{pg}, pods
	})
}

// BenchmarkRecorderIngestGroupsOfOne is the same for 250 bare pods the webhook numbered
// (groups of one, no PodGroup written) that ran and succeeded: each is derived from its
// implied PodGroup.
func BenchmarkRecorderIngestGroupsOfOne(b *testing.B) {
	benchIngest(b, func(id string) ([]*v1alpha1.PodGroup, []*corev1.Pod) {
		p := lonePod("n1", 5, corev1.PodSucceeded, 0, 65)
		p.Name, p.UID, p.Labels[v1alpha1.JobIDLabel] = "infer-"+id, types.UID("uid-"+id), id
		p.Annotations[v1alpha1.PodGroupAnnotation] = p.Name
		return nil, []*corev1.Pod{p}
	})
}

// benchIngest feeds the objects of 250 finished jobs (job makes one job's, by id) to the
// informer handlers and flushes them to a SQLite ledger, per iteration; it reports
// transitions (3 per job) per second of wall time and of this process's CPU.
func benchIngest(b *testing.B, job func(id string) ([]*v1alpha1.PodGroup, []*corev1.Pod)) {
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := New(Config{Store: db, RESTConfig: &rest.Config{Host: "http://unused"}, Clock: func() time.Time { return at(10000) }})
	if err != nil {
		b.Fatal(err)
	}
	next, transitions := 1, 0
	var elapsed, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		var groups []*v1alpha1.PodGroup
		var pods []*corev1.Pod
		for range 250 {
			g, p := job(fmt.Sprint(next))
			next++
			groups, pods = append(groups, g...), append(pods, p...)
		}
		b.StartTimer()
		began, cpuBegan := time.Now(), cpuTime()
		for _, pg := range groups {
			r.st.setGroup(pg)
		}
		for _, p := range pods {
			r.st.setPod(p)
		}
		if err := r.flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(began)
		cpu += cpuTime() - cpuBegan
		transitions += 3 * 250
	}
	b.ReportMetric(float64(transitions)/elapsed.Seconds(), "transitions/s")
	b.ReportMetric(float64(transitions)/cpu.Seconds(), "transitions/cpu-s")
}

// BenchmarkRecorderIngestBatched is the recorder's cost for pending Slurm jobs kept in
// their submit batches (rest.pendingInBatches): per iteration one batch of 256 jobs, as
// the REST API writes it, is read and its jobs recorded PENDING in one flush (one
// transition each). What 50,000 waiting jobs cost the leader is 50,000 over jobs/cpu-s:
//
//	go test -short -run XXX -bench RecorderIngestBatched ./accounting/recorder/
func BenchmarkRecorderIngestBatched(b *testing.B) {
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := New(Config{Store: db, RESTConfig: &rest.Config{Host: "http://unused"}, Clock: func() time.Time { return at(10000) }})
	if err != nil {
		b.Fatal(err)
	}
	var held []*corev1.ConfigMap
	r.ReadSubmitBatches(func() ([]*corev1.ConfigMap, error) { return held, nil })
	next, jobs := 1, 0
	var elapsed, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		var pgs []*v1alpha1.PodGroup
		for range 256 {
			pg := heldJob()
			id := fmt.Sprint(next)
			pg.Name, pg.Labels[v1alpha1.JobIDLabel] = "job-"+id, id
			pgs = append(pgs, pg)
			next++
		}
		held = append(held, batch(fmt.Sprint(next), pgs...))
		b.StartTimer()
		began, cpuBegan := time.Now(), cpuTime()
		r.readBatches(context.Background())
		if err := r.flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(began)
		cpu += cpuTime() - cpuBegan
		jobs += 256
	}
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(jobs)/cpu.Seconds(), "jobs/cpu-s")
}
