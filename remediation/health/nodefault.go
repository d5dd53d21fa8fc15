package health

import "github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"

// NodeFaultAnnotation on a pod says the remediation controller drained it off faulty
// hardware; the value is the fault (condition, GPUs, recommended action). It is set
// before the pod is evicted, because the Eviction API marks every eviction alike
// (DisruptionTarget, reason EvictionByEvictionAPI): without it a job lost to a GPU fault
// could not be told from one preempted by the scheduler. The Slurm lifecycle reads it to
// end a job without --requeue as NODE_FAIL instead of PREEMPTED, and the ledger to
// record NODE_FAIL.
const NodeFaultAnnotation = v1alpha1.NodeFaultAnnotation
