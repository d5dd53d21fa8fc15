package v1alpha1

import "strings"

// GPUResourceCEL is IsGPUResource as a CEL expression over a resource name bound to k
// (the webhook's registration selects GPU pods with it); keep the two in step.
const GPUResourceCEL = "(k == '" + GPUResource + "' || k.startsWith('" + GPUResource + ".') || k.startsWith('nvidia.com/mig-'))"

// IsGPUResource reports whether an extended resource name is one of the NVIDIA device
// plugin's GPU resources: whole GPUs (nvidia.com/gpu), GPUs it shares under another name
// (nvidia.com/gpu.shared with time-slicing's renameByDefault) and the MIG slices of the
// mixed strategy (nvidia.com/mig-1g.10gb and the like). A pod asking for any of them
// uses GPUs, and so does a node offering one.
func IsGPUResource(name string) bool {
	return name == GPUResource || strings.HasPrefix(name, GPUResource+".") || strings.HasPrefix(name, "nvidia.com/mig-")
}
