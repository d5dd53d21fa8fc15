package controller

import (
	"context"
	"errors"
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

// errMoved: the node's stored remediation state is no longer the one a decision was
// made from.
var errMoved = errors.New("the node's remediation state moved on meanwhile")

// advance is updateNode for a step of the remediation: it writes only while the node's
// stored state is still at phase from (and, when validating, the same validation pod),
// else it returns errMoved. A reconcile works from the informer's copy, which can lag
// the controller's own last write: without this a stale "validation pod disappeared"
// (the pod deleted by the return that just happened) would undo the return and leave a
// healthy node waiting for a hardware repair.
func (c *controller) advance(ctx context.Context, name string, from health.Phase, fromPod string, mutate func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur, _ := health.ParseRemediation(n.Annotations) // unreadable counts as no state, as reconcile reads it
		if cur.Phase != from || cur.ValidationPod != fromPod {
			return errMoved
		}
		mutate(n)
		_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// moved reports errMoved as nothing to do (the next event brings the newer state) and
// passes other errors on.
func moved(err error) error {
	if errors.Is(err, errMoved) {
		return nil
	}
	return err
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
