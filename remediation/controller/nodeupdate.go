package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// addTaint quarantines the node; the taint's value is the reason the Slurm nodes view
// (sinfo) shows next to DRAIN.
func addTaint(n *corev1.Node, reason string) {
	t := quarantineTaint()
	for _, have := range n.Spec.Taints {
		if have.MatchTaint(&t) {
			return
		}
	}
	now := metav1.Now()
	t.Value, t.TimeAdded = reason, &now
	n.Spec.Taints = append(n.Spec.Taints, t)
}

// taintReason names the faults in what a taint value may hold (a label value: at most
// 63 of [A-Za-z0-9._-], alphanumeric at both ends), e.g. GPUXidError-XID79; the full
// messages are in the node's conditions and remediation annotation.
func taintReason(faults []activeFault) string {
	parts := make([]string, 0, len(faults))
	for _, f := range faults {
		p := f.Type
		for _, x := range f.XIDs {
			p += fmt.Sprintf("-XID%d", x)
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	v := []byte(strings.Join(parts, "_"))
	for i, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			v[i] = '-'
		}
	}
	return strings.Trim(string(v[:min(len(v), 63)]), "._-")
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
