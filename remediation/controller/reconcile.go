package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sluicehq/sluice/remediation/health"
)

// reconcile moves one node along quarantine -> drain -> repair -> revalidate -> return.
// It returns how soon to look again when waiting on something that sends no event.
func (c *controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	st, err := health.ParseRemediation(node.Annotations)
	if err != nil {
		c.events.Eventf(nodeRef(name), corev1.EventTypeWarning, "BadRemediationState", "%v; starting over", err)
		st = health.RemediationState{}
	}
	faults := activeFaults(node)
	switch st.Phase {
	case "":
		if len(faults) == 0 && st.Reservation != "" {
			// A scheduled GPU repair is done (defer.go): the window goes.
			if err := c.closeWindow(ctx, name, st); err != nil {
				return 0, err
			}
			st.Reservation, st.RepairAt = "", time.Time{}
		}
		if _, open, _ := health.ParseRepair(node.Annotations); !open && st.Reservation == "" && c.mayDefer(faults) {
			return c.scheduleRepair(ctx, node, st, faults)
		}
		nodeFaults, local := split(faults)
		if len(nodeFaults) > 0 {
			return c.quarantine(ctx, node, st, nodeFaults)
		}
		return c.gpuLocal(ctx, node, st, local)
	case health.PhaseRepairScheduled:
		return c.awaitWindow(ctx, node, st, faults)
	case health.PhaseDraining:
		return c.drainNode(ctx, node, st)
	case health.PhaseAwaitingRepair:
		return c.awaitRepair(ctx, node, st, faults)
	case health.PhaseValidating:
		return c.validate(ctx, node, st, faults)
	}
	c.events.Eventf(nodeRef(name), corev1.EventTypeWarning, "BadRemediationState", "unknown phase %q", st.Phase)
	return 0, nil
}

// faultHistory appends one history entry per fault.
func faultHistory(h []health.Fault, faults []activeFault, gpus []string, now time.Time, quarantined bool) []health.Fault {
	for _, f := range faults {
		h = append(h, health.Fault{At: now, Condition: f.Type, Action: f.Action.String(), XIDs: f.XIDs, GPUs: gpus, Quarantined: quarantined})
	}
	return h
}

// quarantine takes the node out: taint, state, downtime, then the drain starts at once.
func (c *controller) quarantine(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	now := c.now()
	if ok, why := c.breaker(node.Name, now); !ok {
		return c.deferQuarantine(node.Name, why, reasonOf(faults)), nil
	}
	from, fromPod := st.Phase, st.ValidationPod
	st.History = faultHistory(c.cfg.Escalation.prune(st.History, now), faults, uuids(unhealthyGPUs(node)), now, true)
	action := worstAction(faults)
	escalated, why := c.cfg.Escalation.escalates(st.History, now)
	if escalated || action == health.ActionHardwareRepair {
		action, st.Escalated = health.ActionHardwareRepair, true
	}
	st.Phase, st.Since, st.Action, st.Reason = health.PhaseDraining, now, action.String(), reasonOf(faults)
	st.DrainDeadline = now.Add(c.cfg.DrainTimeout)
	if err := c.advance(ctx, node.Name, from, fromPod, func(n *corev1.Node) {
		addTaint(n, taintReason(faults))
		setAnnotation(n, health.RemediationAnnotation, st.Format())
	}); err != nil {
		return 0, moved(err)
	}
	c.mu.Lock()
	c.recent[node.Name] = now
	delete(c.deferred, node.Name)
	c.mu.Unlock()
	c.recordDown(ctx, Downtime{Node: node.Name, Start: now, Reason: st.Reason})
	c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "Quarantined", "%s; recommended action: %s", st.Reason, action.Advice())
	if why != "" {
		c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "Escalated", "hardware repair: %s", why)
	}
	return c.drainNode(ctx, node, st)
}

func (c *controller) breakerLets(name string, now time.Time) bool {
	ok, _ := c.breaker(name, now)
	return ok
}

// breaker applies the circuit breaker to node's partition.
func (c *controller) breaker(name string, now time.Time) (bool, string) {
	all, err := c.nodes.List(everything)
	if err != nil {
		return false, err.Error()
	}
	records := make(map[string]nodeRecord, len(all))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range all {
		r := nodeRecord{Partition: n.Labels[c.cfg.PartitionLabel]}
		if st, err := health.ParseRemediation(n.Annotations); err == nil {
			r.Out, r.QuarantinedAt = st.Phase != "", st.Since
			// A node already returned still counts in the window. A GPU reset counts while
			// it is open (below) and, through recent, within the window of this controller.
			for _, f := range st.History {
				if f.Quarantined && f.At.After(r.QuarantinedAt) {
					r.QuarantinedAt = f.At
				}
			}
		}
		if req, ok, err := health.ParseRepair(n.Annotations); err == nil && ok && len(req.GPUs) > 0 {
			r.Out = true // a GPU of it is out of service until its reset is done
		}
		if t, ok := c.recent[n.Name]; ok && t.After(r.QuarantinedAt) {
			r.QuarantinedAt = t
		}
		records[n.Name] = r
	}
	return breakerAllows(records, name, now, c.cfg.BreakerShare, c.cfg.BreakerWindow)
}

// deferQuarantine announces, once per spell, that the breaker keeps a faulty node (or GPU)
// in service, and asks to be called again.
func (c *controller) deferQuarantine(name, why, faults string) time.Duration {
	c.mu.Lock()
	first := !c.deferred[name]
	c.deferred[name] = true
	c.mu.Unlock()
	if first {
		c.events.Eventf(nodeRef(name), corev1.EventTypeWarning, "QuarantineDeferred", "%s; node stays in service: %s", why, faults)
	}
	return c.cfg.RetryInterval
}

// drainNode evicts every pod from a quarantined node, then requests the repair.
func (c *controller) drainNode(ctx context.Context, node *corev1.Node, st health.RemediationState) (time.Duration, error) {
	remaining, err := c.drain(ctx, node.Name, nil, st.Reason, st.DrainDeadline)
	if err != nil || remaining > 0 {
		return c.cfg.RetryInterval, err
	}
	req := health.RepairRequest{Action: st.Action, Reason: st.Reason, RequestedAt: c.now(), Escalated: st.Escalated}
	from, fromPod := st.Phase, st.ValidationPod
	st.Phase = health.PhaseAwaitingRepair
	if err := c.advance(ctx, node.Name, from, fromPod, func(n *corev1.Node) {
		setAnnotation(n, health.RemediationAnnotation, st.Format())
		setAnnotation(n, health.RepairAnnotation, req.Format())
	}); err != nil {
		return 0, moved(err)
	}
	c.events.Eventf(nodeRef(node.Name), corev1.EventTypeNormal, "RepairRequested", "drained; %s requested", st.Action)
	return 0, nil
}

// awaitRepair starts revalidation once every fault is gone; an escalated node also waits
// for its hardware repair to be marked completed.
func (c *controller) awaitRepair(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	if st.Escalated {
		req, ok, err := health.ParseRepair(node.Annotations)
		if err != nil || !ok || req.CompletedAt == nil || req.CompletedAt.Before(st.Since) {
			return 0, nil
		}
		// A failed validation is cleared by the repair; the validation run next decides anew.
		if hasFault(faults, health.ValidationFailed) {
			if err := c.setValidationCondition(ctx, node.Name, corev1.ConditionFalse, "Repaired",
				"repair completed "+req.CompletedAt.UTC().Format(time.RFC3339)+"; validation pending"); err != nil {
				return 0, err
			}
			return 0, nil // the condition's update brings the node back here
		}
	}
	if len(faults) > 0 {
		return 0, nil
	}
	return c.startValidation(ctx, node, st)
}

func hasFault(faults []activeFault, t health.ConditionType) bool {
	for _, f := range faults {
		if f.Type == string(t) {
			return true
		}
	}
	return false
}

// gpuLocal evicts only the pods on GPUs the agent marked unhealthy and requests a GPU
// reset; the node stays in service and the scheduler avoids just those GPUs. When the
// faults clear, the request and the GPUs' downtime are closed.
func (c *controller) gpuLocal(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	req, hasReq, _ := health.ParseRepair(node.Annotations) // a bad request is replaced
	if len(faults) == 0 {
		if hasReq && len(req.GPUs) > 0 {
			return 0, c.closeGPURepair(ctx, node.Name, req)
		}
		return 0, nil
	}
	bad := unhealthyGPUs(node)
	if len(bad) == 0 {
		return 0, nil // the agent writes the GPU annotation just after the conditions
	}
	now := c.now()
	gpus := uuids(bad)
	if !hasReq || !sameSet(req.GPUs, gpus) {
		st.History = faultHistory(c.cfg.Escalation.prune(st.History, now), faults, gpus, now, false)
		escalated, why := c.cfg.Escalation.escalates(st.History, now)
		if escalated && c.breakerLets(node.Name, now) {
			// The same GPU keeps failing: take the node out for hardware repair. (Were the
			// breaker holding, the GPU is handled locally below until it lets go.)
			c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "Escalated", "hardware repair: %s", why)
			escalatedFaults := append([]activeFault(nil), faults...)
			for i := range escalatedFaults {
				escalatedFaults[i].Action = health.ActionHardwareRepair
			}
			st.History = st.History[:len(st.History)-len(faults)] // quarantine records them again
			return c.quarantine(ctx, node, st, escalatedFaults)
		}
		if ok, why := c.breaker(node.Name, now); !ok {
			// Bounded as a node quarantine is: past the breaker the GPU's pods stay (the
			// agent's health annotation still keeps new work off the GPU).
			return c.deferQuarantine(node.Name, why, reasonOf(faults)), nil
		}
		req = health.RepairRequest{Action: worstAction(faults).String(), Reason: reasonOf(faults), GPUs: gpus, RequestedAt: now}
		if err := c.updateNode(ctx, node.Name, func(n *corev1.Node) {
			setAnnotation(n, health.RemediationAnnotation, st.Format())
			setAnnotation(n, health.RepairAnnotation, req.Format())
		}); err != nil {
			return 0, err
		}
		c.mu.Lock()
		c.recent[node.Name] = now
		delete(c.deferred, node.Name)
		c.mu.Unlock()
		c.recordDown(ctx, Downtime{Node: node.Name, GPUs: gpus, Start: now, Reason: req.Reason})
		c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "GPUQuarantined", "%v: %s; recommended action: %s",
			gpus, req.Reason, worstAction(faults).Advice())
	}
	remaining, err := c.drain(ctx, node.Name, bad, req.Reason, req.RequestedAt.Add(c.cfg.DrainTimeout))
	if err != nil || remaining > 0 {
		return c.cfg.RetryInterval, err
	}
	return 0, nil
}

func (c *controller) closeGPURepair(ctx context.Context, name string, req health.RepairRequest) error {
	if err := c.updateNode(ctx, name, func(n *corev1.Node) { delete(n.Annotations, health.RepairAnnotation) }); err != nil {
		return err
	}
	c.recordDown(ctx, Downtime{Node: name, GPUs: req.GPUs, Start: req.RequestedAt, End: c.now(), Reason: req.Reason})
	c.events.Eventf(nodeRef(name), corev1.EventTypeNormal, "GPUReturned", "%v healthy again", req.GPUs)
	return nil
}

func (c *controller) recordDown(ctx context.Context, d Downtime) {
	if c.cfg.Downtime == nil {
		return
	}
	if err := c.cfg.Downtime.RecordDown(ctx, d); err != nil {
		c.events.Eventf(nodeRef(d.Node), corev1.EventTypeWarning, "DowntimeNotRecorded", "%v", err)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}
