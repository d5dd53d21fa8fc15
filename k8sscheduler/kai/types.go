// Package kai reads KAI Scheduler's objects (Queue scheduling.run.ai/v2, PodGroup
// scheduling.run.ai/v2alpha2) and translates them into Sluice's own, so a cluster that ran
// KAI moves to Sluice with its manifests unchanged (docs/kai-compatibility.md).
//
// The types here are Sluice's own reading of the fields KAI documents; only those fields
// are read. Objects come from the API server as unstructured data, so nothing of KAI's
// Go code is needed.
package kai

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of KAI's Queue and PodGroup.
const Group = "scheduling.run.ai"

// SchedulerName is the spec.schedulerName of pods written for KAI.
const SchedulerName = "kai-scheduler"

// KAI's pod and workload keys that Sluice honours (docs/kai-compatibility.md).
const (
	// PodGroupAnnotation on a pod names its KAI PodGroup.
	PodGroupAnnotation = "pod-group-name"
	// FractionContainerAnnotation names the one container of a pod that gets its share of a
	// GPU (gpu-fraction, gpu-memory).
	FractionContainerAnnotation = "gpu-fraction-container-name"
	// PriorityClassLabel on a workload or its pods names the PriorityClass of the workload.
	PriorityClassLabel = "priorityClassName"
	// PreemptibilityLabel on a workload or its pods states preemptible or non-preemptible.
	PreemptibilityLabel = "kai.scheduler/preemptibility"
	// NonPreemptiblePriority is the PriorityClass value from which KAI treats a workload as
	// non-preemptible (its build and inference classes).
	NonPreemptiblePriority = 100
	// DefaultQueuePriority is a KAI Queue's priority when it states none.
	DefaultQueuePriority = 100
	// Unlimited is KAI's value for "no bound" in a queue's quota or limit.
	Unlimited = -1
)

// MirrorLabel marks the Sluice Queues written from KAI Queues (by the KAI mirror or by
// `sluice import kai`): only those are updated or deleted when the KAI Queue changes, so a
// Sluice Queue an admin wrote under the same name is never overwritten.
const MirrorLabel = "sluice.dev/from-kai"

var (
	// QueuesGVR are KAI's Queues.
	QueuesGVR = schema.GroupVersionResource{Group: Group, Version: "v2", Resource: "queues"}
	// PodGroupsGVR are KAI's PodGroups.
	PodGroupsGVR = schema.GroupVersionResource{Group: Group, Version: "v2alpha2", Resource: "podgroups"}
)

// Queue is a KAI Queue: a node of its quota tree.
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              QueueSpec `json:"spec,omitempty"`
}

// QueueSpec is what Sluice reads of a KAI Queue's spec.
type QueueSpec struct {
	DisplayName       string           `json:"displayName,omitempty"`
	ParentQueue       string           `json:"parentQueue,omitempty"`
	Priority          *int64           `json:"priority,omitempty"`
	Resources         *QueueResources  `json:"resources,omitempty"`
	PreemptMinRuntime *metav1.Duration `json:"preemptMinRuntime,omitempty"`
	ReclaimMinRuntime *metav1.Duration `json:"reclaimMinRuntime,omitempty"`
}

// QueueResources are a KAI Queue's bounds: GPUs in devices (0.5 is half a GPU), CPU in
// millicores, memory in megabytes (10^6 bytes).
type QueueResources struct {
	GPU    *QueueResource `json:"gpu,omitempty"`
	CPU    *QueueResource `json:"cpu,omitempty"`
	Memory *QueueResource `json:"memory,omitempty"`
}

// QueueResource is one resource's quota (deserved), limit and over-quota weight; -1 is
// unlimited. Pointers tell an unset field from 0, which KAI gives different meanings.
type QueueResource struct {
	Quota           *float64 `json:"quota,omitempty"`
	Limit           *float64 `json:"limit,omitempty"`
	OverQuotaWeight *float64 `json:"overQuotaWeight,omitempty"`
}

// PodGroup is a KAI PodGroup: a gang its pods name with the pod-group-name annotation.
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodGroupSpec `json:"spec,omitempty"`
}

// PodGroupSpec is what Sluice reads of a KAI PodGroup's spec.
type PodGroupSpec struct {
	MinMember          int32              `json:"minMember,omitempty"`
	Queue              string             `json:"queue,omitempty"`
	PriorityClassName  string             `json:"priorityClassName,omitempty"`
	Preemptibility     string             `json:"preemptibility,omitempty"`
	TopologyConstraint TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// TopologyConstraint packs a gang into one domain of a topology level (a node label key).
type TopologyConstraint struct {
	Topology               string `json:"topology,omitempty"`
	RequiredTopologyLevel  string `json:"requiredTopologyLevel,omitempty"`
	PreferredTopologyLevel string `json:"preferredTopologyLevel,omitempty"`
}

// fromUnstructured decodes an object read with a dynamic client into out.
func fromUnstructured(u *unstructured.Unstructured, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

// DecodeQueue reads a KAI Queue from its unstructured form.
func DecodeQueue(u *unstructured.Unstructured) (*Queue, error) {
	q := &Queue{}
	return q, fromUnstructured(u, q)
}

// DecodePodGroup reads a KAI PodGroup from its unstructured form.
func DecodePodGroup(u *unstructured.Unstructured) (*PodGroup, error) {
	pg := &PodGroup{}
	return pg, fromUnstructured(u, pg)
}
