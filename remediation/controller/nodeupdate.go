package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"github.com/sluicehq/sluice/remediation/health"
)

var everything = labels.Everything()

// updateNode applies mutate to the node's latest version in one write, retrying on
// conflict, so the taint and the state annotation always change together.
func (c *controller) updateNode(ctx context.Context, name string, mutate func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func quarantineTaint() corev1.Taint {
	return corev1.Taint{Key: health.QuarantineTaint, Effect: corev1.TaintEffectNoSchedule}
}

func addTaint(n *corev1.Node) {
	t := quarantineTaint()
	for _, have := range n.Spec.Taints {
		if have.MatchTaint(&t) {
			return
		}
	}
	now := metav1.Now()
	t.TimeAdded = &now
	n.Spec.Taints = append(n.Spec.Taints, t)
}

func removeTaint(n *corev1.Node) {
	t := quarantineTaint()
	kept := n.Spec.Taints[:0]
	for _, have := range n.Spec.Taints {
		if !have.MatchTaint(&t) {
			kept = append(kept, have)
		}
	}
	n.Spec.Taints = kept
}

func setAnnotation(n *corev1.Node, key, value string) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[key] = value
}
