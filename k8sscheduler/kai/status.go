package kai

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// SluiceQueuesGVR are Sluice's Queues, watched for their status.
var SluiceQueuesGVR = v1alpha1.GroupVersion.WithResource("queues")

// QueueStatus is what a KAI Queue's status shows of the Sluice Queue it became, in KAI's
// form: resource lists keyed nvidia.com/gpu (fractions allowed), cpu and memory, over all
// partitions, the queue and its children together (as the scheduler sums a parent's).
type QueueStatus struct {
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
	Requested corev1.ResourceList `json:"requested,omitempty"`
}

// KAIQueueStatus is the KAI form of a Sluice Queue's status.
func KAIQueueStatus(s v1alpha1.QueueStatus) QueueStatus {
	return QueueStatus{Allocated: resourceList(s.Allocated), Requested: resourceList(s.Requested)}
}

func resourceList(a v1alpha1.ResourceAmounts) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range map[corev1.ResourceName]*resource.Quantity{
		"nvidia.com/gpu": a.GPU, corev1.ResourceCPU: a.CPU, corev1.ResourceMemory: a.Memory,
	} {
		if q != nil {
			out[name] = *q
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// syncQueueStatus writes the status of one mirrored Sluice Queue (u, read by the informer)
// onto the KAI Queue of its name, when it differs from what is there.
func (m *Mirror) syncQueueStatus(ctx context.Context, u *unstructured.Unstructured) error {
	var q v1alpha1.Queue
	if err := fromUnstructured(u, &q); err != nil {
		return err
	}
	want := KAIQueueStatus(q.Status)
	kq, err := m.dyn.Resource(QueuesGVR).Get(ctx, q.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // its KAI Queue is gone; the mirror deletes this one
	}
	if err != nil {
		return err
	}
	var have struct {
		Status QueueStatus `json:"status"`
	}
	if err := fromUnstructured(kq, &have); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(have.Status, want) {
		return nil
	}
	// The other status fields (conditions, child queues: KAI's own controller's, if any)
	// are kept as they are.
	for field, list := range map[string]corev1.ResourceList{"allocated": want.Allocated, "requested": want.Requested} {
		if len(list) == 0 {
			unstructured.RemoveNestedField(kq.Object, "status", field)
			continue
		}
		vals := map[string]any{}
		for name, q := range list {
			vals[string(name)] = q.String()
		}
		if err := unstructured.SetNestedMap(kq.Object, vals, "status", field); err != nil {
			return err
		}
	}
	if _, err := m.dyn.Resource(QueuesGVR).UpdateStatus(ctx, kq, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("KAI Queue %s status: %w", q.Name, err)
	}
	return nil
}
