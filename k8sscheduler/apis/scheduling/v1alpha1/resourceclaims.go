package v1alpha1

// ResourceClaimsRefusal is why Sluice does not take a pod with spec.resourceClaims: the
// webhook refuses it at admission with this message, and the scheduler keeps one that got
// in (webhook off) pending with it.
const ResourceClaimsRefusal = "spec.resourceClaims (Dynamic Resource Allocation) is not supported by the Sluice scheduler: " +
	"its claims would never be allocated, so the pod could never start. Ask for GPUs with " + GPUResource +
	" or the " + GPUFractionAnnotation + "/" + GPUMemoryAnnotation + " annotations, or leave spec.schedulerName " +
	"unset so kube-scheduler allocates the claims"
