package kube

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// What scontrol update NodeName=... State=DRAIN Reason=... leaves on the
// Node besides the cordon, so sinfo -R shows who drained it, when and why.
const (
	DrainReasonAnnotation = "sluice.dev/drain-reason"
	DrainUserAnnotation   = "sluice.dev/drain-user"
	DrainTimeAnnotation   = "sluice.dev/drain-time" // RFC 3339
)

// formatDrainTime writes a DrainTimeAnnotation value: RFC 3339 in UTC, to the second.
func formatDrainTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// parseDrainTime reads a DrainTimeAnnotation value.
func parseDrainTime(value string) (time.Time, error) { return time.Parse(time.RFC3339, value) }

// UpdateNode drains a node by cordoning it, the Kubernetes way to keep
// new work off a node while its pods run to their end (the scheduler
// places nothing on an unschedulable node), or resumes it by lifting the
// cordon (only a cordon a DRAIN set). The remediation controller's quarantine taint is its own: a
// resumed node that still carries it gets a warning, not a lifted taint.
func (b *Backend) UpdateNode(ctx context.Context, name string, u slurmapi.NodeUpdate) (string, error) {
	var warning string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := b.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			if apierrors.IsNotFound(err) {
				return slurmapi.NotFound(slurmapi.ErrInvalidNodeName, "node_name", "node %q does not exist", name)
			}
			return err
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if u.Drain {
			n.Spec.Unschedulable = true
			n.Annotations[DrainReasonAnnotation] = u.Reason
			n.Annotations[DrainUserAnnotation] = u.User
			n.Annotations[DrainTimeAnnotation] = formatDrainTime(time.Now())
		} else {
			// Only a cordon a Slurm drain set is Slurm's to lift: one from
			// kubectl drain, an autoscaler or an upgrade is the cluster's.
			if _, ours := n.Annotations[DrainReasonAnnotation]; n.Spec.Unschedulable && !ours {
				return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrNotSupported, "node_name",
					"node %s was cordoned outside Sluice (kubectl drain, an autoscaler or an upgrade), not by a DRAIN: uncordon it with kubectl", name)
			}
			n.Spec.Unschedulable = false
			delete(n.Annotations, DrainReasonAnnotation)
			delete(n.Annotations, DrainUserAnnotation)
			delete(n.Annotations, DrainTimeAnnotation)
			warning = ""
			for _, t := range n.Spec.Taints {
				if t.Key == v1alpha1.QuarantineTaint {
					warning = fmt.Sprintf("node %s is resumed but still quarantined by the remediation controller (%s); it takes work again once it passes validation", name, t.Value)
				}
			}
		}
		return b.c.Update(ctx, &n)
	})
	if apierrors.IsForbidden(err) {
		return "", slurmapi.Errorf(http.StatusForbidden, slurmapi.ErrAccessDenied, "node_name", "the server may not change nodes: %v", err)
	}
	return warning, err
}

// drainRecord is the reason, user and time a drain left on the Node.
func drainRecord(n *corev1.Node) (reason, user string, at time.Time) {
	at, _ = parseDrainTime(n.Annotations[DrainTimeAnnotation])
	return n.Annotations[DrainReasonAnnotation], n.Annotations[DrainUserAnnotation], at
}
