// Package controller is the remediation controller (in `sluice server`): a fault condition
// from the agent quarantines the node (taint), drains it through the Eviction API, records
// a repair request, and returns the node only after a validation pod succeeds and every
// fault condition is False. GPU-local faults evict only the pods on the faulty GPU. A
// circuit breaker caps how much of a partition may be out at once.
package controller

import (
	"context"
	"errors"
	"time"

	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

// Config configures the controller. Zero values take the documented defaults.
type Config struct {
	// Informers, when set, is the informer cache the controller reads nodes and pods from,
	// shared with other readers and run by the caller (the server's); its transform must
	// keep what a drain reads of every pod (phase, owners, annotations, the validation
	// label) and a node's conditions, taints and annotations. When nil the controller
	// runs informers of its own.
	Informers crcache.Informers
	// PartitionLabel groups nodes for the circuit breaker; default sluice.dev/partition.
	// Nodes without it form one unnamed partition.
	PartitionLabel string
	// BreakerShare is the largest share of a partition's nodes that may be quarantined
	// within BreakerWindow; default 0.5 in 5 minutes.
	BreakerShare  float64
	BreakerWindow time.Duration
	// DrainTimeout bounds how long evictions may be refused (by PodDisruptionBudgets);
	// after it the remaining pods are deleted, since they sit on hardware that is failing.
	// Default 5 minutes.
	DrainTimeout time.Duration
	// TerminatingTimeout bounds how long a drain waits for a pod that was deleted but stays
	// terminating (a node whose kubelet no longer answers, a finalizer nobody removes):
	// that long after the pod's deletion time it is force-deleted and the drain moves on
	// without it. Default 5 minutes.
	TerminatingTimeout time.Duration
	// RetryInterval is how often a blocked eviction or a running validation is looked at
	// again; default 1s.
	RetryInterval time.Duration
	// Escalation: repeated faults become a hardware repair; defaults 3 same XIDs in 24h,
	// 5 remediations in 7 days.
	Escalation Escalation
	// Validation is the pod run on a repaired node before it returns, and on idle nodes.
	Validation Validation
	// IdleValidation runs the validation pod on idle nodes on a schedule, so a bad node
	// is found before a job lands on it.
	IdleValidation IdleValidation
	// History receives every validation run that finished (passed, failed, preempted); optional.
	History ValidationRecorder
	// Downtime receives the intervals a node (or GPU) was out of service; optional.
	Downtime DowntimeRecorder
	// DeferRepairs books a maintenance reservation for faults that can wait, instead of
	// draining at once (defer.go).
	DeferRepairs DeferRepairs
}

// DeferRepairs: a node whose every fault is one of Conditions keeps running its work; a
// MAINT reservation on it opens when that work ends by its time limits (at most MaxDelay
// from the fault), so new work that would run into the repair stays off meanwhile, and the
// repair starts when the window opens or the node empties, whichever comes first.
type DeferRepairs struct {
	// Conditions that may wait, e.g. GPURowRemapPending (a remap that takes effect at the
	// next GPU reset); empty: every fault is handled at once.
	Conditions []health.ConditionType
	// MaxDelay bounds how long a repair waits; default 24h.
	MaxDelay time.Duration
	// Window is how long the reservation lasts once open; default 2h.
	Window time.Duration
}

// Validation describes the validation pod.
type Validation struct {
	// Image is the validation image; default nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04.
	Image string
	// Command defaults to a level-2 DCGM diagnostic: dcgmi diag -r 2.
	Command []string
	// Namespace the pod runs in; default kube-system.
	Namespace string
	// Annotations and Labels are added to the pod (the rig uses them to script the
	// simulated run).
	Annotations map[string]string
	Labels      map[string]string
	// Timeout: a validation pod that has not succeeded by then counts as failed; default 15m.
	Timeout time.Duration
}

// IdleValidation schedules validations of idle nodes: nodes with no running pod other
// than DaemonSet and static pods, not quarantined, no fault, no repair open.
type IdleValidation struct {
	// Interval is how long after its last validation ended a node is due again (a node never
	// validated: after it was first seen idle by this controller); default 24h. A
	// negative Interval turns idle validation off.
	Interval time.Duration
	// MaxNodes is the most nodes of a partition validated at once; default 1.
	MaxNodes int
	// Partitions overrides Interval and MaxNodes per partition (by name).
	Partitions map[string]IdleSchedule
	// Check is how often nodes are looked at; default 10s.
	Check time.Duration
}

// IdleSchedule is one partition's idle validation schedule; zero fields take the
// IdleValidation's.
type IdleSchedule struct {
	Interval time.Duration
	MaxNodes int
}

// schedule is the partition's interval and concurrency.
func (v IdleValidation) schedule(partition string) IdleSchedule {
	s := IdleSchedule{Interval: v.Interval, MaxNodes: v.MaxNodes}
	if p, ok := v.Partitions[partition]; ok {
		if p.Interval != 0 {
			s.Interval = p.Interval
		}
		if p.MaxNodes != 0 {
			s.MaxNodes = p.MaxNodes
		}
	}
	return s
}

// ValidationRecorder stores finished validation runs (the health history).
type ValidationRecorder interface {
	RecordValidation(ctx context.Context, node, partition string, run health.ValidationRun) error
}

// Downtime is an interval a node, or some of its GPUs, could not run work.
type Downtime struct {
	Node string
	// GPUs lists the UUIDs out of service; empty means the whole node.
	GPUs   []string
	Start  time.Time
	End    time.Time // zero while still down
	Reason string
}

// DowntimeRecorder stores down intervals for accounting. RecordDown is called once when
// the interval opens (End zero) and again, with the same Node and Start, when it closes.
type DowntimeRecorder interface {
	RecordDown(ctx context.Context, d Downtime) error
}

func (c Config) withDefaults() (Config, error) {
	if c.DeferRepairs.MaxDelay == 0 {
		c.DeferRepairs.MaxDelay = 24 * time.Hour
	}
	if c.DeferRepairs.Window == 0 {
		c.DeferRepairs.Window = 2 * time.Hour
	}
	if c.DeferRepairs.MaxDelay < 0 || c.DeferRepairs.Window < 0 {
		return c, errors.New("remediation controller: DeferRepairs MaxDelay and Window must not be negative")
	}
	if c.PartitionLabel == "" {
		c.PartitionLabel = v1alpha1.PartitionLabel
	}
	if c.BreakerShare == 0 {
		c.BreakerShare = 0.5
	}
	if c.BreakerShare < 0 || c.BreakerShare > 1 {
		return c, errors.New("remediation controller: BreakerShare must be within 0..1")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.BreakerWindow, 5*time.Minute)
	def(&c.DrainTimeout, 5*time.Minute)
	def(&c.TerminatingTimeout, 5*time.Minute)
	def(&c.RetryInterval, time.Second)
	def(&c.Escalation.XIDWindow, 24*time.Hour)
	def(&c.Escalation.RemediationWindow, 7*24*time.Hour)
	def(&c.Validation.Timeout, 15*time.Minute)
	def(&c.IdleValidation.Check, 10*time.Second)
	if c.IdleValidation.Interval == 0 {
		c.IdleValidation.Interval = 24 * time.Hour
	}
	if c.IdleValidation.MaxNodes <= 0 {
		c.IdleValidation.MaxNodes = 1
	}
	if c.Escalation.SameXID <= 0 {
		c.Escalation.SameXID = 3
	}
	if c.Escalation.Remediations <= 0 {
		c.Escalation.Remediations = 5
	}
	v := &c.Validation
	if v.Image == "" {
		v.Image = "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"
	}
	if len(v.Command) == 0 {
		v.Command = []string{"dcgmi", "diag", "-r", "2"}
	}
	if v.Namespace == "" {
		v.Namespace = "kube-system"
	}
	return c, nil
}
