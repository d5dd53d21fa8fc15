package realnodes

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// visible is what a job printed as visible=<NVIDIA_VISIBLE_DEVICES>.
var visible = regexp.MustCompile(`visible=(\S*)`)

// nodeGPUs are the device IDs node's device plugin serves.
func nodeGPUs(node string) []string {
	return []string{cluster.GPUUUID(node, 0), cluster.GPUUUID(node, 1)}
}

// TestWholeGPUFromTheDevicePlugin: a job asking for a whole GPU gets the device the
// kubelet's device manager allocated from the node's device plugin, one of that node's.
func TestWholeGPUFromTheDevicePlugin(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J whole-gpu --gres=gpu:1 -o gpu-%j.txt
echo "visible=$NVIDIA_VISIBLE_DEVICES"
`)
	if st := s.waitEnd(t, id, 3*time.Minute); st != "COMPLETED" {
		t.Fatalf("job %s ended %s", id, st)
	}
	out := s.readShared(t, "gpu-"+id+".txt")
	m := visible.FindStringSubmatch(out)
	node := pods(t, id)[0].Spec.NodeName
	if m == nil || !slices.Contains(nodeGPUs(node), m[1]) {
		t.Fatalf("job %s on %s saw %q; want one of that node's devices %v, from the kubelet", id, node, out, nodeGPUs(node))
	}
}

// TestSharedGPUThroughItsReservationPod: a job asking for half a GPU runs once the GPU's
// reservation pod, a real container of the sluice image, got a device from the kubelet
// and reported it on itself; the job's NVIDIA_VISIBLE_DEVICES is that device.
func TestSharedGPUThroughItsReservationPod(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J half-gpu --gres=mps:50 -o share-%j.txt
echo "visible=$NVIDIA_VISIBLE_DEVICES"
sleep 10
`)
	waitFile(t, s, "share-"+id+".txt", "visible=")
	m := visible.FindStringSubmatch(s.readShared(t, "share-"+id+".txt"))
	if m == nil || m[1] == "" {
		t.Fatalf("job %s saw no device: %q", id, s.tryRead("share-"+id+".txt"))
	}
	node := pods(t, id)[0].Spec.NodeName
	if !slices.Contains(nodeGPUs(node), m[1]) {
		t.Errorf("job %s on %s saw %s, not one of that node's devices %v", id, node, m[1], nodeGPUs(node))
	}
	list, err := e2e.Rig(t).Client().CoreV1().Pods(reservationNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: v1alpha1.GPUReservationLabel + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			reported = append(reported, p.Name+"="+p.Annotations[v1alpha1.ReservedGPUAnnotation]+" ("+string(p.Status.Phase)+")")
			if p.Annotations[v1alpha1.ReservedGPUAnnotation] == m[1] {
				if st := s.waitEnd(t, id, 2*time.Minute); st != "COMPLETED" {
					t.Errorf("job %s ended %s", id, st)
				}
				return
			}
		}
	}
	t.Errorf("no reservation pod on %s reported %s, the device job %s saw: %v", node, m[1], id, reported)
}
