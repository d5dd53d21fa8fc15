package v1alpha1

// Names of the GPU reservation pods that hold a shared GPU in the device plugin's books
// (docs/architecture.md, "Shared GPUs and the device plugin").
const (
	// GPUReservationLabel marks a reservation pod; its value is "true". The scheduler
	// creates these pods, bound, in its own namespace; no tenant can.
	GPUReservationLabel = "sluice.dev/gpu-reservation"
	// ReservedGPUAnnotation is written on a reservation pod by the pod itself (`sluice
	// gpu-reservation`): the device the kubelet gave it, as NVIDIA_VISIBLE_DEVICES named
	// it (a UUID on a real node). It is outside sluice.dev/ because the reservation pod's
	// own service account writes it, and the sluice-owned-metadata policy keeps sluice.dev/
	// keys to the server alone.
	ReservedGPUAnnotation = "gpu-reservation.sluice.dev/device"
	// GPUReservationSchedulerName is the schedulerName of reservation pods: created
	// bound, they need no scheduler, and a name of their own keeps the webhook, the pod
	// grouper and the ledger (which look at Sluice's scheduler name) away from them.
	GPUReservationSchedulerName = "sluice-gpu-reservation"

	// MPSLabel ("true") on a node says it runs an NVIDIA MPS control daemon that its
	// GPU pods reach (CUDA_MPS_PIPE_DIRECTORY): there fraction pods get MPS limits.
	MPSLabel = "sluice.dev/mps"
	// MPSThreadPercentageAnnotation and MPSMemoryLimitAnnotation are written at bind
	// time on a shared-GPU pod placed on an MPS node, ready for the CUDA_MPS_* variables
	// the webhook points at them.
	MPSThreadPercentageAnnotation = "sluice.dev/mps-active-thread-percentage"
	MPSMemoryLimitAnnotation      = "sluice.dev/mps-pinned-device-mem-limit"
	// MPSThreadPercentageEnv and MPSMemoryLimitEnv are read by CUDA's MPS client.
	MPSThreadPercentageEnv = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
	MPSMemoryLimitEnv      = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
)
