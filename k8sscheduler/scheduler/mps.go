package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// On a node that runs an NVIDIA MPS control daemon (v1alpha1.MPSLabel), a shared-GPU pod's
// request becomes a limit, as Slurm's gres/mps does: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps
// its share of the GPU's streaming multiprocessors at its portion, and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT caps the memory it may allocate on each device at what
// it was granted. Elsewhere the portion and memory are accounted, not enforced.

// mpsNodeLocked reports whether the node is labelled as running an MPS control daemon.
// Called with c.mu held (binds are prepared under it, so bind workers never wait for it).
func (c *cache) mpsNodeLocked(name string) bool {
	n := c.nodes[name]
	return n != nil && n.base.Labels[v1alpha1.MPSLabel] == "true"
}

// mpsNodesLocked is mpsNodeLocked for each bind's node.
func (c *cache) mpsNodesLocked(binds []bridge.Bind) []bool {
	out := make([]bool, len(binds))
	for i := range binds {
		out[i] = c.mpsNodeLocked(binds[i].Node)
	}
	return out
}

// mpsLimits are the MPS annotations of a shared assignment on an MPS node, nil otherwise:
// the thread percentage (the portion, rounded up, at least 1) and, when memory was
// granted, the pinned memory limit of each device, numbered as the container sees them
// (from 0, in the order of NVIDIA_VISIBLE_DEVICES), in MiB.
func mpsLimits(a v1alpha1.GPUAssignment) map[string]string {
	if !a.MPS || len(a.GPUs) == 0 || a.Portion >= 1 || a.Portion <= 0 {
		return nil
	}
	pct := max(1, min(100, int(math.Ceil(a.Portion*100-1e-9))))
	out := map[string]string{v1alpha1.MPSThreadPercentageAnnotation: v1alpha1.FormatMPSThreadPercentage(pct)}
	if a.GPUMemoryMiB > 0 {
		limits := make([]int64, len(a.GPUs))
		for i := range limits {
			limits[i] = a.GPUMemoryMiB
		}
		out[v1alpha1.MPSMemoryLimitAnnotation] = v1alpha1.FormatMPSMemoryLimit(limits)
	}
	return out
}

// addMPSEnv sets the MPS limits as plain variables on every container of a pod created
// bound (a Slurm job's): its annotations are known before it exists. A variable the
// container already sets is left alone.
func addMPSEnv(pod *corev1.Pod, limits map[string]string) {
	if len(limits) == 0 {
		return
	}
	vars := []struct{ env, annotation string }{
		{v1alpha1.MPSThreadPercentageEnv, v1alpha1.MPSThreadPercentageAnnotation},
		{v1alpha1.MPSMemoryLimitEnv, v1alpha1.MPSMemoryLimitAnnotation},
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			for _, v := range vars {
				val, ok := limits[v.annotation]
				if !ok || hasEnv(c, v.env) {
					continue
				}
				c.Env = append(c.Env, corev1.EnvVar{Name: v.env, Value: val})
			}
		}
	}
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}
