package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SlurmNamespacePrefix starts the namespace of a Slurm account's jobs: the REST
// API puts the jobs charged to account nlp in slurm-nlp.
const SlurmNamespacePrefix = "slurm-"

// SlurmNamespace is where the REST API puts the jobs charged to account.
func SlurmNamespace(account string) string { return SlurmNamespacePrefix + account }

// QueueAccess is a Queue's namespace selector, parsed once: who may use the queue.
//
// +kubebuilder:object:generate=false
type QueueAccess struct {
	queue    string
	selector labels.Selector // nil: no namespace but the queue's Slurm namespace
	problem  string          // why the selector could not be parsed; it then admits none
}

// AccessOf parses q's spec.namespaceSelector.
func AccessOf(q *Queue) QueueAccess {
	a := QueueAccess{queue: q.Name}
	if q.Spec.NamespaceSelector == nil {
		return a
	}
	sel, err := metav1.LabelSelectorAsSelector(q.Spec.NamespaceSelector)
	if err != nil {
		a.problem = fmt.Sprintf("queue %q has an invalid spec.namespaceSelector (%v), so it admits no namespace", q.Name, err)
		return a
	}
	a.selector = sel
	return a
}

// Admits reports whether pods in the named namespace, with these labels, may use
// the queue.
func (a QueueAccess) Admits(namespace string, nsLabels map[string]string) bool {
	if namespace == SlurmNamespace(a.queue) {
		return true
	}
	return a.selector != nil && a.selector.Matches(labels.Set(nsLabels))
}

// Refusal says why namespace may not use the queue, for an admission denial or a
// pending reason; others are the queues it may use.
func (a QueueAccess) Refusal(namespace string, others []string) string {
	why := fmt.Sprintf("queue %q does not admit namespace %q", a.queue, namespace)
	switch {
	case a.problem != "":
		why += ": " + a.problem
	case a.selector == nil:
		why += " (the queue has no spec.namespaceSelector)"
	default:
		why += fmt.Sprintf(" (its spec.namespaceSelector %q does not match the namespace's labels)", a.selector.String())
	}
	if len(others) == 0 {
		return why + "; no queue admits this namespace: ask an administrator to add it to a queue's spec.namespaceSelector"
	}
	return why + fmt.Sprintf("; queues this namespace may use: %s", strings.Join(others, ", "))
}

// AdmittingQueues names, sorted, the queues among accesses that admit the namespace.
func AdmittingQueues(accesses []QueueAccess, namespace string, nsLabels map[string]string) []string {
	var out []string
	for _, a := range accesses {
		if a.Admits(namespace, nsLabels) {
			out = append(out, a.queue)
		}
	}
	slices.Sort(out)
	return out
}
