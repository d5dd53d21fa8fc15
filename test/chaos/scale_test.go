package chaos

import (
	"os"
	"time"
)

// scale is how much load a fault meets and how long it lasts.
type scale struct {
	name       string
	jobs       int           // Slurm jobs in the REST burst
	clients    int           // concurrent REST clients
	gangEvery  int           // every n-th job asks for 2 nodes (a gang)
	pods       int           // manifest pods in the stream
	podEvery   time.Duration // the stream's pace
	jobRun     time.Duration // how long each job and pod runs
	outage     time.Duration // how long a fault lasts (API server down, etcd paused, database locked)
	settleTime time.Duration // the most the work may take to finish after the fault
}

// currentScale is small for `make test` (the whole suite in a few minutes on
// a loaded 2-core machine) and full for `make chaos` (SLUICE_CHAOS_SCALE=full).
func currentScale() scale {
	if os.Getenv("SLUICE_CHAOS_SCALE") == "full" {
		return scale{name: "full", jobs: 240, clients: 16, gangEvery: 6, pods: 60, podEvery: 50 * time.Millisecond,
			jobRun: 3 * time.Second, outage: 15 * time.Second, settleTime: 8 * time.Minute}
	}
	return scale{name: "small", jobs: 24, clients: 4, gangEvery: 6, pods: 8, podEvery: 150 * time.Millisecond,
		jobRun: 2 * time.Second, outage: 8 * time.Second, settleTime: 4 * time.Minute}
}
