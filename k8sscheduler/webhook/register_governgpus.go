package webhook

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// GPUPodsWebhookName is the webhook that governs the GPU pods of other schedulers
// (GovernGPUs); the API server names it when it cannot reach it.
const GPUPodsWebhookName = "gpu-pods.sluice.dev"

// CEL over a pod POD (object or oldObject) for the registration's match conditions. They
// select at least what the handler governs (governgpus.go), so what they miss is never
// one the handler would refuse, and no other pod depends on the webhook being up.
const (
	// celRequestsGPU: a container or init container requests or limits a GPU resource
	// (any quantity: the handler lets a zero one through).
	celRequestsGPU = "[POD.spec.containers, POD.spec.?initContainers.orValue([])].exists(l, l.exists(c, " +
		"[c.?resources.?requests.orValue({}), c.?resources.?limits.orValue({})].exists(r, r.exists(k, " + v1alpha1.GPUResourceCEL + "))))"
	// celToleratesTaint: a toleration naming the GPU taint's key, or every key.
	celToleratesTaint = "POD.spec.?tolerations.orValue([]).exists(t, t.?key.orValue('') == '" + v1alpha1.GPUTaint + "' || " +
		"(t.?key.orValue('') == '' && t.?operator.orValue('') == 'Exists'))"
	// celDaemonSetPod: the pod's controller is a DaemonSet (as its author says).
	celDaemonSetPod = "POD.metadata.?ownerReferences.orValue([]).exists(r, r.kind == 'DaemonSet' && r.apiVersion.startsWith('apps/') && r.?controller.orValue(false))"
)

// on puts expr (object, oldObject) for POD in a CEL fragment.
func on(expr, fragment string) string {
	return "(" + strings.ReplaceAll(fragment, "POD", expr) + ")"
}

// gpuPodsWebhook is the second webhook of the configuration, beside sluice (which it
// copies the client, failure policy and timeout of): pod creations and updates outside
// the exempt namespaces (a namespace selector, so the API server skips them without a
// call), by anyone but Sluice, for other schedulers, that
//   - create a pod requesting GPUs, or tolerating the GPU taint unless a DaemonSet's;
//   - update a pod so that it tolerates the taint where it did not.
//
// Failure policy Fail: with the webhook down such pods are refused, not let through.
func (reg Registration) gpuPodsWebhook(sluice admissionregistrationv1.MutatingWebhook) (admissionregistrationv1.MutatingWebhook, error) {
	g, err := reg.GovernGPUs.withDefaults()
	if err != nil {
		return sluice, err
	}
	schedulers, err := celList(reg.SchedulerNames)
	if err != nil {
		return sluice, err
	}
	gpu, tol, ds := on("object", celRequestsGPU), on("object", celToleratesTaint), on("object", celDaemonSetPod)
	conditions := []admissionregistrationv1.MatchCondition{
		{Name: "other-scheduler", Expression: "!(object.spec.?schedulerName.orValue('') in " + schedulers + ")"},
		{Name: "gpu-or-gpu-taint", Expression: fmt.Sprintf(
			"request.operation == 'CREATE' ? (%s || (%s && !%s)) : (%s && !%s && (%s || !%s))",
			gpu, tol, ds, tol, on("oldObject", celToleratesTaint), gpu, ds)},
	}
	if len(reg.Users) > 0 {
		users, err := celList(reg.Users)
		if err != nil {
			return sluice, err
		}
		conditions = append(conditions, admissionregistrationv1.MatchCondition{
			Name: "not-sluice", Expression: "!(request.userInfo.username in " + users + ")"})
	}
	namespaced := admissionregistrationv1.NamespacedScope
	wh := sluice
	wh.Name = GPUPodsWebhookName
	wh.Rules = []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &namespaced,
		},
	}}
	wh.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: g.ExemptNamespaces,
	}}}
	wh.MatchConditions = conditions
	return wh, nil
}
