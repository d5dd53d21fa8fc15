package scheduler

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Config tunes the scheduler. The zero value is usable: every zero field takes the default
// named beside it.
type Config struct {
	// SchedulerName selects the pods this scheduler places (spec.schedulerName);
	// default v1alpha1.DefaultSchedulerName.
	SchedulerName string
	// Period is the longest time between two cycles; default 1s. A cycle also runs
	// Debounce after any relevant change.
	Period time.Duration
	// Debounce is how long the loop waits after a change before it runs a cycle, so that
	// a burst of creates is scheduled together; default 20ms.
	Debounce time.Duration
	// BindWorkers is how many binds (and evictions, and Slurm pod creates) are in flight
	// at once; default 128. When the API server is busy each bind waits long on it, so 32
	// in flight left a 4000-pod stream's pods queued behind each other's binds, where
	// kube-scheduler binds every pod from a goroutine of its own (measured:
	// docs/benchmarks.md, Sluice's scheduler alone).
	BindWorkers int
	// PendingStatusDelay is how long a group must wait before its PodGroup is told why,
	// so that groups placed within a moment cost no status write; default 2s.
	PendingStatusDelay time.Duration
	// QueueStatusPeriod is the least time between two writes of one Queue's status;
	// default 5s.
	QueueStatusPeriod time.Duration
	// ToleratedTaints are NoSchedule/NoExecute taint keys that Sluice's pods are assumed
	// to tolerate; default nvidia.com/gpu and sluice.dev/gpu (the taint that keeps GPU
	// nodes for Sluice's pods: one admitted before it was turned on lacks the toleration
	// the webhook now gives). The quarantine taint is never tolerated.
	ToleratedTaints []string
	// ClientQPS and ClientBurst rate-limit the scheduler's API client; default 5000 and
	// 10000. Binding a backlog at 1000 pods/s needs more than that many writes a second;
	// the API server's own priority and fairness, not this limiter, protects it (500/1000
	// held a 4000-pod backlog to the limiter's pace; measured: docs/benchmarks.md, Sluice's
	// scheduler alone).
	ClientQPS   float32
	ClientBurst int
	// Core tunes the scheduling core.
	Core bridge.Config
	// Usage, when set, reads each queue's decayed historical usage per partition (the
	// accounting ledger's) for fair share. It is called at most every UsageRefresh, off
	// the cycle loop; each cycle's snapshot carries its latest successful result.
	Usage func(ctx context.Context) ([]bridge.QueueUsage, error)
	// UsageRefresh is the least time between two Usage calls; default 30s.
	UsageRefresh time.Duration
	// Informers, when set, is the informer cache the scheduler reads, shared with other
	// readers and run (Start) by the caller, whose transform must keep what the scheduler
	// reads (SharedTransform does). When nil the scheduler runs informers of its own,
	// slimmed to what it reads.
	Informers crcache.Informers
	// PodObserver, when set, sees every pod the scheduler's informer receives, whole,
	// before the cache slims it: the pod grouper takes its pods from here rather than
	// from a watch of its own (podgrouper.Controller.Observer). It runs on the informer's
	// goroutine and must not block. With Informers set, the shared cache's transform
	// calls the observer instead (SharedTransform), and New refuses a PodObserver.
	PodObserver func(*corev1.Pod)
	// SubmitBatchNamespace is where the Slurm API stores batches of submitted jobs
	// (v1alpha1.SubmitBatchLabel): the scheduler reads the pending jobs there, so a Slurm
	// job's PodGroup is written only when it starts (batches.go). Empty reads no batches:
	// every Slurm job must then be a PodGroup before it is seen.
	SubmitBatchNamespace string
	// GPUReservationNamespace is where the reservation pods of shared GPUs run (one per
	// shared GPU, asking the device plugin for it: reservations.go); default kube-system.
	// Only reservation pods in it point fraction pods at a device.
	GPUReservationNamespace string
	// GPUReservationImage runs `sluice gpu-reservation` in those pods: the server's own
	// image; default DefaultGPUReservationImage.
	GPUReservationImage string
	// GPUDeviceClasses are the DRA DeviceClasses whose devices the core counts as whole
	// GPUs (dra.go); default DefaultGPUDeviceClasses.
	GPUDeviceClasses []string
	// GPUReservationServiceAccount runs those pods; it must be allowed to get and patch
	// pods in GPUReservationNamespace (the chart's sluice-gpu-reservation). Default: the
	// namespace's default service account.
	GPUReservationServiceAccount string
}

// DefaultGPUReservationImage is the image of reservation pods when none is configured.
const DefaultGPUReservationImage = "ghcr.io/sluicehq/sluice:latest"

func (c Config) withDefaults() Config {
	if c.SchedulerName == "" {
		c.SchedulerName = v1alpha1.DefaultSchedulerName
	}
	if c.Period <= 0 {
		c.Period = time.Second
	}
	if c.Debounce <= 0 {
		c.Debounce = 20 * time.Millisecond
	}
	if c.BindWorkers <= 0 {
		c.BindWorkers = 128
	}
	if c.PendingStatusDelay <= 0 {
		c.PendingStatusDelay = 2 * time.Second
	}
	if c.QueueStatusPeriod <= 0 {
		c.QueueStatusPeriod = 5 * time.Second
	}
	if c.ToleratedTaints == nil {
		c.ToleratedTaints = []string{v1alpha1.GPUResource, v1alpha1.GPUTaint}
	}
	if c.UsageRefresh <= 0 {
		c.UsageRefresh = 30 * time.Second
	}
	if c.ClientQPS <= 0 {
		c.ClientQPS = 5000
	}
	if c.ClientBurst <= 0 {
		c.ClientBurst = 10000
	}
	if len(c.GPUDeviceClasses) == 0 {
		c.GPUDeviceClasses = DefaultGPUDeviceClasses
	}
	if c.GPUReservationNamespace == "" {
		c.GPUReservationNamespace = "kube-system"
	}
	if c.GPUReservationImage == "" {
		c.GPUReservationImage = DefaultGPUReservationImage
	}
	return c
}

// PodFactory makes the pods of a PodGroup that has none until it starts (a Slurm job).
// It returns one pod per bind, in the order of binds; the scheduler sets spec.nodeName,
// spec.schedulerName, the PodGroup and task-group annotations and the GPU assignment
// annotations, then creates them already bound.
type PodFactory interface {
	Pods(pg *v1alpha1.PodGroup, binds []bridge.Bind) ([]*corev1.Pod, error)
}
