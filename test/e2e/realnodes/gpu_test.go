package realnodes

import (
	"context"
	"regexp"
	"slices"
	"strings"
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

// TestWholeGPUThroughDRA: a job asking for a whole GPU on the DRA node's partition gets a
// claim of gpu.nvidia.com that Sluice's scheduler allocates; the real kubelet has the
// node's DRA kubelet plugin prepare it, and the job's NVIDIA_VISIBLE_DEVICES is the UUID
// of the GPU the pod was given (where the node's runtime applies CDI).
func TestWholeGPUThroughDRA(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J dra-gpu --gres=gpu:1 -o dra-%j.txt
echo "visible=$NVIDIA_VISIBLE_DEVICES"
`, "-p", "realdra")
	if st := s.waitEnd(t, id, 3*time.Minute); st != "COMPLETED" {
		t.Fatalf("job %s ended %s:\n%s", id, st, s.tryRead("dra-"+id+".txt"))
	}
	p := pods(t, id)[0]
	if p.Spec.NodeName != "realdra-0" {
		t.Fatalf("job %s ran on %s, not the DRA node", id, p.Spec.NodeName)
	}
	if _, ok := p.Spec.Containers[0].Resources.Limits[cluster.ResourceGPU]; ok || len(p.Spec.ResourceClaims) != 1 {
		t.Errorf("pod %s asks %v and claims %+v; want its GPU as a claim only", p.Name, p.Spec.Containers[0].Resources.Limits, p.Spec.ResourceClaims)
	}
	a, err := v1alpha1.ParseGPUAssignment(p.Annotations[v1alpha1.GPUAssignmentAnnotation])
	if err != nil || len(a.GPUs) != 1 || !slices.Contains(nodeGPUs(p.Spec.NodeName), a.GPUs[0].UUID) {
		t.Fatalf("pod %s names GPUs %q (%v); want one of %v", p.Name, p.Annotations[v1alpha1.GPUAssignmentAnnotation], err, nodeGPUs(p.Spec.NodeName))
	}
	out := s.readShared(t, "dra-"+id+".txt")
	node, err := e2e.Rig(t).Client().CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.RuntimeHasCDI(node) {
		t.Skipf("%s's runtime %s applies no CDI: job %s ran with its claim prepared, its %s is unchecked (it printed %q)",
			node.Name, node.Status.NodeInfo.ContainerRuntimeVersion, id, "NVIDIA_VISIBLE_DEVICES", strings.TrimSpace(out))
	}
	if m := visible.FindStringSubmatch(out); m == nil || m[1] != a.GPUs[0].UUID {
		t.Errorf("job %s saw %q; want visible=%s, the GPU its claim got", id, out, a.GPUs[0].UUID)
	}
}
