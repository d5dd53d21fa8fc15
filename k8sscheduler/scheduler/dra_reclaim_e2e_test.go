package scheduler

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// draReclaimPool is one DRA node of 2 GPUs.
func draReclaimPool() cluster.NodePool {
	return cluster.NodePool{Name: "drr", Count: 1, GPUsPerNode: 2, GPUModel: "H100-80GB", GPUMemoryMiB: 81920,
		CPU: "64", Memory: "512Gi", DRA: true}
}

// GPUs claimed through DRA are reclaimed across queues as device-plugin GPUs are: queue
// A, with no quota, holds both GPUs of the node with preemptible pods; queue B, whose
// quota is those 2 GPUs, claims them; A's pods are evicted, their claims freed, and B's
// claim is allocated the node's devices.
func TestDRAGPUsReclaimedAcrossQueues(t *testing.T) {
	e := setup(t)
	e.partition("drr", "")
	e.run()
	e.queue("drr-a", "drr", 0)
	e.queue("drr-b", "drr", 2)
	e.claimTemplate("one-gpu", claimSpec(cluster.DeviceClassGPU, 1))
	var held []string // preemptible: they state neither preemptibility nor a QOS
	for i := range 2 {
		held = append(held, e.draPodsIn("drr", nil, fmt.Sprintf("a-%d", i), "drr-a", 1, 1, "", "one-gpu", "")...)
	}
	e.waitBound(held, waitLong)

	e.claim("b-two", claimSpec(cluster.DeviceClassGPU, 2))
	b := e.draPodsIn("drr", nil, "b", "drr-b", 1, 1, "b-two", "", "")
	node := e.waitBound(b, waitLong)[0]
	rc, err := e.podClaim(context.Background(), b[0])
	if err != nil {
		t.Fatal(err)
	}
	if devs, err := allocatedOn(rc, node, e.pod(b[0])); err != nil || len(devs) != 2 {
		t.Fatalf("queue B's claim: devices %v (%v), want the node's 2 GPUs", devs, err)
	}
	e2e.WaitFor(t, "queue A's pods gone", waitLong, func(ctx context.Context) (bool, error) {
		for _, n := range held {
			p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, n, metav1.GetOptions{})
			if err == nil && p.DeletionTimestamp == nil {
				return false, fmt.Errorf("pod %s of queue A still runs", n)
			}
		}
		return true, nil
	})
}
