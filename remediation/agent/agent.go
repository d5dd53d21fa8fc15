package agent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

// Run watches the node until ctx ends. It returns an error only for a bad Config or an
// unreachable API server at start; NVML and sysfs problems become Unknown conditions.
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("agent: node %s: %w", cfg.NodeName, err)
	}
	a := newAgent(cfg, newEventWriter(client, cfg.NodeName))
	a.client = client
	defer a.close()
	return a.loop(ctx)
}

type agent struct {
	cfg       Config
	log       logr.Logger // the context's, from loop on
	client    kubernetes.Interface
	events    *eventWriter
	lib       nvml.Interface // nil when NVML is unavailable
	nvmlError string
	prev      *health.Readings
	// held are critical XIDs from NVML events, kept until a repair completes after them
	// (or the agent restarts, as it does when the node reboots).
	held     []health.XIDRecord
	reported map[string]bool // injected XIDs already announced as Events
	polls    uint64
	// ibBest is the best rate each InfiniBand port has run at, and ibSeen the most ports
	// seen, since the agent started: what the node's links can do, learned, not configured.
	ibBest map[string]float64
	ibSeen int
}

func newAgent(cfg Config, events *eventWriter) *agent {
	a := &agent{cfg: cfg, events: events, reported: map[string]bool{}, ibBest: map[string]float64{}}
	lib := cfg.NVML
	if lib == nil {
		lib = nvml.New()
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		a.nvmlError = "NVML init: " + nvml.ErrorString(ret)
	} else {
		a.lib = lib
	}
	return a
}

func (a *agent) close() {
	if a.lib != nil {
		a.lib.Shutdown()
	}
	a.events.close()
}

func (a *agent) loop(ctx context.Context) error {
	a.log = klog.FromContext(ctx)
	xids := make(chan health.XIDRecord, 16)
	poke := make(chan struct{}, 1)
	if a.lib != nil {
		go func() {
			if err := watchEvents(ctx, a.lib, a.cfg.EventWait, xids, poke); err != nil {
				klog.FromContext(ctx).Error(err, "agent: XID events unavailable, polling only", "node", a.cfg.NodeName)
			}
		}()
	}
	if a.cfg.FaultFile != "" {
		go watchFile(ctx, a.cfg.FaultFile, a.cfg.FaultFilePoll, poke)
	}
	poll := time.NewTicker(a.cfg.PollInterval)
	defer poll.Stop()
	for {
		if err := a.cycle(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "agent: health report", "node", a.cfg.NodeName)
		}
		select {
		case <-ctx.Done():
			return nil
		case x := <-xids:
			a.onXID(x)
		case <-poke:
		case <-poll.C:
		}
	}
}

// onXID reports every XID as an Event and holds the ones that need a recovery action.
func (a *agent) onXID(x health.XIDRecord) {
	action, desc := health.ClassifyXID(x.XID, x.Driver)
	a.events.xid(x, action, desc)
	if action != health.ActionNone {
		a.held = append(a.held, x)
	}
}

// cycle reads everything, judges it and publishes the result.
func (a *agent) cycle(ctx context.Context) error {
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, gpus := a.assess(node, time.Now())
	return a.publish(ctx, node, conds, gpus)
}

// assess is one poll judged: the node's fault conditions and per-GPU health.
func (a *agent) assess(node *corev1.Node, now time.Time) ([]corev1.NodeCondition, []health.GPUInfo) {
	a.polls++
	r := a.read(node, now)
	exp := health.Expectations{IBPorts: max(a.cfg.ExpectedIBPorts, a.ibSeen), IBPortRates: a.ibBest, IBSymbolErrors: a.cfg.IBSymbolErrors}
	if len(r.GPUs) > 0 {
		exp.IBRateGbps = a.cfg.ibRateFor(r.GPUs[0].Model)
	}
	findings := health.Evaluate(a.prev, r, exp)
	a.prev = &r
	a.learnIB(r)
	return health.Conditions(r, findings, now), health.GPUHealth(r, findings)
}

// learnIB remembers how many ports the node has and the best rate each active port ran
// at, after the poll is judged, so a later drop is compared with what the link did.
func (a *agent) learnIB(r health.Readings) {
	if r.IBError != "" {
		return
	}
	a.ibSeen = max(a.ibSeen, len(r.IBPorts))
	for _, p := range r.IBPorts {
		if p.State == "ACTIVE" && p.PhysState == "LinkUp" {
			a.ibBest[p.Name()] = max(a.ibBest[p.Name()], p.RateGbps)
		}
	}
}

// read gathers one poll: NVML (or the simulated inventory), held XIDs, InfiniBand, and the
// injected faults on top.
func (a *agent) read(node *corev1.Node, now time.Time) health.Readings {
	var r health.Readings
	known, _ := health.ParseGPUs(node.Annotations[health.GPUsAnnotation]) // a bad annotation is rewritten below
	switch {
	case a.lib != nil:
		gpus, err := readGPUs(a.lib, a.expectedGPUs(node), known)
		if err != nil {
			r.NVMLError = err.Error()
		}
		r.GPUs = gpus
	case a.cfg.FaultFile != "":
		r.GPUs = simulatedGPUs(known)
	default:
		r.NVMLError = a.nvmlError
	}
	a.dropRepaired(node)
	r.XIDs = append(r.XIDs, a.held...)
	ports, devices, err := readIB(a.cfg.SysfsRoot)
	if err != nil {
		r.IBError = err.Error()
	}
	r.IBPorts, r.IBDevices = ports, devices
	if a.cfg.FaultFile != "" {
		faults, err := readFaults(a.cfg.FaultFile)
		if err != nil {
			a.log.Error(err, "agent: fault file", "node", a.cfg.NodeName)
		}
		before := len(r.XIDs)
		faults.apply(&r, a.polls, now)
		a.announceInjected(r.XIDs[before:])
	}
	return r
}

func (a *agent) expectedGPUs(node *corev1.Node) int {
	if a.cfg.ExpectedGPUs > 0 {
		return a.cfg.ExpectedGPUs
	}
	n, _ := strconv.Atoi(node.Labels[v1alpha1.GPUCountLabel]) // absent label: no expectation
	return n
}

// simulatedGPUs stands in healthy GPUs for a node without NVML, from its published inventory.
func simulatedGPUs(known []health.GPUInfo) []health.GPUReading {
	out := make([]health.GPUReading, 0, len(known))
	for _, k := range known {
		out = append(out, health.GPUReading{Index: int(k.Index), UUID: k.UUID, Model: k.Model, MemoryMiB: uint64(k.MemoryMiB)})
	}
	return out
}

// dropRepaired forgets held XIDs that a completed repair has dealt with.
func (a *agent) dropRepaired(node *corev1.Node) {
	req, ok, err := health.ParseRepair(node.Annotations)
	if !ok || err != nil || req.CompletedAt == nil {
		return
	}
	kept := a.held[:0]
	for _, x := range a.held {
		if x.At.After(*req.CompletedAt) {
			kept = append(kept, x)
		}
	}
	a.held = kept
}

// announceInjected emits an Event when an injected XID appears in the fault file; one
// that stays there is announced once, one removed and written again is announced again.
func (a *agent) announceInjected(xids []health.XIDRecord) {
	seen := make(map[string]bool, len(xids))
	for _, x := range xids {
		key := fmt.Sprintf("%d/%d", x.GPU, x.XID)
		seen[key] = true
		if !a.reported[key] {
			action, desc := health.ClassifyXID(x.XID, x.Driver)
			a.events.xid(x, action, desc)
		}
	}
	a.reported = seen
}

// watchFile pokes the agent whenever the fault file's size or modification time changes.
func watchFile(ctx context.Context, path string, every time.Duration, poke chan<- struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last string
	for {
		sig := ""
		if st, err := os.Stat(path); err == nil {
			sig = fmt.Sprint(st.Size(), st.ModTime().UnixNano())
		}
		if sig != last {
			last = sig
			select {
			case poke <- struct{}{}:
			default: // a poke is already waiting
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
