package recorder

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// nodeRecord is a node's capacity as the ledger keeps it: what it offers to pods (its
// allocatable), GPU memory from the GPU Operator's per-GPU memory label.
func nodeRecord(n *corev1.Node) accounting.Node {
	a := n.Status.Allocatable
	if len(a) == 0 {
		a = n.Status.Capacity
	}
	gpus := v1alpha1.NodeGPUCount(n)
	t := accounting.TRES{CPUs: a.Cpu().Value(), MemMB: a.Memory().Value() >> 20, GPUs: float64(gpus), Nodes: 1}
	if mib, err := strconv.ParseInt(n.Labels[v1alpha1.GPUMemoryLabel], 10, 64); err == nil && mib > 0 {
		t.GPUMemMB = mib * gpus
	}
	return accounting.Node{Name: n.Name, Partition: n.Labels[v1alpha1.PartitionLabel], TRES: t, Added: n.CreationTimestamp.UTC()}
}

// slimNode keeps what nodeRecord reads, so the cache does not hold images and conditions.
func slimNode(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels,
			CreationTimestamp: n.CreationTimestamp, DeletionTimestamp: n.DeletionTimestamp},
		Status: corev1.NodeStatus{Allocatable: n.Status.Allocatable, Capacity: n.Status.Capacity},
	}
}

func (s *state) setNode(n *corev1.Node) {
	rec := nodeRecord(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.liveNodes[n.Name] = true
	if s.wroteNode[n.Name] != rec {
		s.nodes[n.Name] = rec
	}
}

func (s *state) deleteNode(n *corev1.Node) {
	rec := nodeRecord(n)
	rec.Removed = s.clock().UTC().Truncate(time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.liveNodes, n.Name)
	s.nodes[n.Name] = rec
}

// writeNodes records changed node capacity. On the first pass it also closes the nodes
// the ledger holds open that the cluster no longer has (removed while the recorder was
// down), so their capacity stops counting as idle.
func (r *Recorder) writeNodes(ctx context.Context, reconcile bool) error {
	s := r.st
	s.mu.Lock()
	pending := s.nodes
	s.nodes = map[string]accounting.Node{}
	live := make(map[string]bool, len(s.liveNodes))
	for n := range s.liveNodes {
		live[n] = true
	}
	s.mu.Unlock()
	if reconcile {
		recorded, err := r.cfg.Store.Nodes(ctx)
		if err != nil {
			s.requeueNodes(pending)
			return fmt.Errorf("read recorded nodes: %w", err)
		}
		for _, n := range recorded {
			if n.Removed.IsZero() && !live[n.Name] {
				if _, ok := pending[n.Name]; !ok {
					n.Removed = r.cfg.Clock().UTC().Truncate(time.Second)
					pending[n.Name] = n
				}
			}
		}
	}
	for name, n := range pending {
		if err := r.cfg.Store.UpsertNode(ctx, n); err != nil {
			s.requeueNodes(pending)
			return fmt.Errorf("record node %s: %w", name, err)
		}
		s.mu.Lock()
		s.wroteNode[name] = n
		s.mu.Unlock()
	}
	return nil
}

// requeueNodes puts back node writes that failed, unless a newer one came meanwhile.
func (s *state) requeueNodes(pending map[string]accounting.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, n := range pending {
		if _, newer := s.nodes[name]; !newer {
			s.nodes[name] = n
		}
	}
}
