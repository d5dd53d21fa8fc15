package bench

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

const (
	// reclaimQueue is the under-quota queue: its GPU quota covers every sample.
	reclaimQueue   = "bench-under-quota"
	reclaimSamples = 5
)

// reclaimSite is the under-quota queue of the reclaim mode.
func (h *harness) reclaimSite(ctx context.Context) error {
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: reclaimQueue}, Spec: v1alpha1.QueueSpec{
		NamespaceSelector: &metav1.LabelSelector{},
		Quotas: []v1alpha1.PartitionQuota{{Partition: poolName, GPU: &v1alpha1.ResourceQuota{
			Quota: resource.NewQuantity(reclaimSamples, resource.DecimalSI)}}}}}
	if err := h.crs.Create(ctx, q); err != nil {
		return fmt.Errorf("create queue %s: %w", reclaimQueue, err)
	}
	return nil
}

// measureReclaim times reclaiming one GPU for an under-quota queue (Sluice only): every
// GPU is first taken by single-GPU pods of the bench queue, which has no quota, so all of
// them run over quota and, naming no QOS, preemptible. Then one pod at a time asks for a
// GPU in reclaimQueue; each must wait for one of those pods to be evicted and gone. The
// result's bind p50 and max are the times from each pod's creation to its binding; CPU,
// peak RSS and writes cover the samples only, not the fill.
func (h *harness) measureReclaim(ctx context.Context) (Result, error) {
	r := Result{Contender: h.name, Mode: modeReclaim, Pods: reclaimSamples}
	fillNS, ns := "bench-reclaim-fill", "bench-reclaim"
	capacity := h.opts.Nodes * h.opts.GPUsPerNode
	for _, n := range []string{fillNS, ns} {
		if err := h.namespace(ctx, n); err != nil {
			return r, err
		}
	}
	fill, err := watchPods(ctx, h.kube, fillNS, capacity)
	if err != nil {
		return r, err
	}
	defer fill.stop()
	w, err := watchPods(ctx, h.kube, ns, reclaimSamples)
	if err != nil {
		return r, err
	}
	defer w.stop()
	usage, err := h.sched.start(ctx)
	if err != nil {
		return r, err
	}
	if err := h.awaitReady(ctx, modeReclaim, 1, true); err != nil {
		h.sched.stop()
		return r, err
	}
	if err := h.createPods(ctx, fillNS, capacity); err != nil {
		h.sched.stop()
		return r, err
	}
	if _, _, err := fill.wait(ctx, waitLimit); err != nil {
		h.sched.stop()
		return r, fmt.Errorf("filling the cluster: %w", err)
	}
	before, err := scrapeAPIServer(ctx, h.kube)
	if err != nil {
		h.sched.stop()
		return r, err
	}
	cpuBefore, _ := usage() // the samples' CPU only, not the fill's
	began := time.Now()
	for i := range reclaimSamples {
		if err := h.createPod(ctx, ns, fmt.Sprintf("p%d", i), reclaimQueue); err != nil {
			h.sched.stop()
			return r, err
		}
		if err := w.awaitBound(ctx, i+1); err != nil {
			h.sched.stop()
			return r, err
		}
	}
	bound, running, werr := w.wait(ctx, waitLimit)
	r.CPUSeconds, r.PeakRSSMiB = usage()
	r.CPUSeconds -= cpuBefore
	h.sched.stop()
	if werr != nil {
		return r, werr
	}
	r.ToBound, r.ToRunning = bound.Sub(began), running.Sub(began)
	r.BindP50, r.BindP99, r.BindMax = w.bindLatency(began)
	after, err := scrapeAPIServer(ctx, h.kube)
	if err != nil {
		return r, err
	}
	r.Writes = after.writes.minus(before.writes).schedulerWrites()
	r.APIServerCPU = after.cpu - before.cpu
	r.Load = loadAverage()
	fmt.Fprintf(h.opts.Log, "bench: %s reclaim: p50 %s, max %s, writes %v\n", h.name, r.BindP50, r.BindMax, r.Writes)
	if err := h.clear(ctx, ns, reclaimSamples); err != nil {
		return r, err
	}
	return r, h.clear(ctx, fillNS, capacity)
}
