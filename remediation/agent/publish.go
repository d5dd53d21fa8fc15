package agent

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/remediation/health"
)

// publish writes the conditions and the GPU annotation, each only when it changed, so a
// healthy node costs no API writes between polls.
func (a *agent) publish(ctx context.Context, node *corev1.Node, conds []corev1.NodeCondition, gpus []health.GPUInfo) error {
	nodes := a.client.CoreV1().Nodes()
	if health.ConditionsChanged(node.Status.Conditions, conds) {
		merged := health.MergeConditions(node.Status.Conditions, conds)
		// A strategic merge patch of only our types: conditions merge by type, so the
		// kubelet's (or kwok's) own conditions are left alone.
		ours := make([]corev1.NodeCondition, 0, len(conds))
		for _, c := range merged {
			if health.IsFaultCondition(string(c.Type)) {
				ours = append(ours, c)
			}
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": ours}})
		if err != nil {
			return err
		}
		if _, err := nodes.PatchStatus(ctx, node.Name, patch); err != nil {
			return fmt.Errorf("patch conditions: %w", err)
		}
	}
	if v := health.FormatGPUs(gpus); len(gpus) > 0 && node.Annotations[health.GPUsAnnotation] != v {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{health.GPUsAnnotation: v}}})
		if err != nil {
			return err
		}
		if _, err := nodes.Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("patch %s: %w", health.GPUsAnnotation, err)
		}
	}
	return nil
}
