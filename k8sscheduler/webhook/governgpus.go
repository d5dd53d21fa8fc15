package webhook

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// GovernGPUs is the mode in which every GPU is Sluice's to give (webhook.governGPUs in the
// server's configuration). Without it a pod that requests nvidia.com/gpu and names no
// scheduler is placed by kube-scheduler and charged to no queue, whatever its namespace's
// queue has left. With it, outside the exempt namespaces and for anyone but Sluice itself:
//
//   - a pod of another scheduler that requests a GPU resource (v1alpha1.IsGPUResource, in
//     any container or init container) is adopted (given Sluice's schedulerName, then
//     admitted as any Sluice pod: queue, PodGroup, job id) or refused, per Action;
//   - a pod of another scheduler that tolerates the Sluice GPU taint (v1alpha1.GPUTaint)
//     is refused, at creation and when the toleration is added later (tolerations may be
//     appended to a running pod);
//   - a pod created with spec.nodeName set (which no scheduler ever sees) that requests
//     GPUs or tolerates the taint is refused, a Sluice pod included;
//   - a DaemonSet's pod that requests no GPU is left alone, tolerations and all (device
//     plugins, DCGM exporters); one that requests GPUs is refused in either mode: Sluice
//     cannot place a DaemonSet's pods, and a tenant that may create DaemonSets would
//     otherwise run GPUs outside its queue.
//
// Every pod Sluice admits as its own gets the taint's toleration, and the server taints
// the nodes that offer GPUs (gputaint), so a pod that reaches kube-scheduler some other way
// still cannot land on a GPU node.
type GovernGPUs struct {
	// Enabled turns the mode on.
	Enabled bool
	// Action is what becomes of a pod of another scheduler that requests GPUs:
	// ActionAdopt (the default) or ActionRefuse.
	Action string
	// ExemptNamespaces are left alone, as before the mode: the cluster's own (where its
	// GPU daemons and operators run) and Sluice's. nil means DefaultExemptNamespaces.
	ExemptNamespaces []string
}

// The two actions of GovernGPUs.
const (
	ActionAdopt  = "adopt"
	ActionRefuse = "refuse"
)

// DefaultExemptNamespaces are the cluster's own namespaces; the server adds its own.
var DefaultExemptNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// withDefaults fills in the action and exempt namespaces and checks them (a namespace
// name is also quoted into the registration's namespace selector).
func (g GovernGPUs) withDefaults() (GovernGPUs, error) {
	if !g.Enabled {
		return GovernGPUs{}, nil
	}
	switch g.Action {
	case "":
		g.Action = ActionAdopt
	case ActionAdopt, ActionRefuse:
	default:
		return g, fmt.Errorf("webhook: governGPUs.action %q: must be %s or %s", g.Action, ActionAdopt, ActionRefuse)
	}
	if g.ExemptNamespaces == nil {
		g.ExemptNamespaces = DefaultExemptNamespaces
	}
	for _, ns := range g.ExemptNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return g, fmt.Errorf("webhook: governGPUs.exemptNamespaces: %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	return g, nil
}

// governs reports whether the mode applies to a request in namespace by user: it is on,
// the namespace is not exempt and the user is not Sluice.
func (a *admitter) governs(namespace, user string) bool {
	return a.gpus.Enabled && !slices.Contains(a.gpus.ExemptNamespaces, namespace) && !slices.Contains(a.self, user)
}

// gpuTaint is the taint the server puts on GPU nodes.
var gpuTaint = corev1.Taint{Key: v1alpha1.GPUTaint, Effect: corev1.TaintEffectNoSchedule}

// gpuToleration is the toleration Sluice's pods get.
var gpuToleration = corev1.Toleration{Key: v1alpha1.GPUTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// toleratesGPUTaint reports whether any of the pod's tolerations tolerates the GPU taint
// (naming its key, or every key with operator Exists). Comparison operators count as the
// API server may allow them: a toleration that might let the pod onto a GPU node is one.
func toleratesGPUTaint(pod *corev1.Pod) bool {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &gpuTaint, true) {
			return true
		}
	}
	return false
}

// gpuRequest names the first container (init or regular) that requests or limits a GPU
// resource, and that resource; "" when none does.
func gpuRequest(pod *corev1.Pod) (container, res string) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				names := make([]string, 0, len(rl))
				for name, q := range rl {
					if v1alpha1.IsGPUResource(string(name)) && !q.IsZero() {
						names = append(names, string(name))
					}
				}
				if len(names) > 0 {
					slices.Sort(names)
					return c.Name, names[0]
				}
			}
		}
	}
	return "", ""
}

var daemonSetKind = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}

// daemonSetOf names the DaemonSet that controls the pod, "" for none. The reference is
// the pod author's to write, so it proves nothing: what it earns (a pod without GPUs that
// tolerates the taint) is what a DaemonSet in the same namespace would earn anyway.
func daemonSetOf(pod *corev1.Pod) string {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return ""
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.WithKind(ref.Kind).GroupKind() != daemonSetKind {
		return ""
	}
	return ref.Name
}

// governedCreate decides a new pod in a governed namespace that names none of Sluice's
// schedulers: adopt it (give it Sluice's name), refuse it (why), or leave it alone.
func (a *admitter) governedCreate(pod *corev1.Pod) (adopt bool, refusal string) {
	container, res := gpuRequest(pod)
	tolerates := toleratesGPUTaint(pod)
	if ds := daemonSetOf(pod); ds != "" {
		if container == "" {
			return false, "" // device plugins, exporters: they may tolerate the taint
		}
		return false, fmt.Sprintf("pod of DaemonSet %q: container %q requests %s, but Sluice cannot place a DaemonSet's pods, "+
			"and GPUs it does not place are charged to no queue. Run GPU work as a Job, Deployment or pod with spec.schedulerName: %s. %s",
			ds, container, res, a.schedulerNames[0], a.exemptHint())
	}
	if pod.Spec.NodeName != "" && (container != "" || tolerates) {
		return false, a.boundRefusal(pod, container, res)
	}
	if container != "" {
		if a.gpus.Action == ActionAdopt {
			return true, ""
		}
		return false, fmt.Sprintf("container %q requests %s but the pod names scheduler %q: GPUs on this cluster are scheduled by Sluice, "+
			"and charged to the namespace's queue. Set spec.schedulerName: %s. (Refused by the server's webhook.governGPUs, action %s.) %s",
			container, res, pod.Spec.SchedulerName, a.schedulerNames[0], ActionRefuse, a.exemptHint())
	}
	if tolerates {
		return false, a.tolerationRefusal(pod, "tolerates")
	}
	return false, ""
}

// governedSluicePod is why a pod for Sluice's own scheduler is refused in a governed
// namespace ("" when it is not): one created already bound skips the scheduler, and with
// it the queue's limits.
func (a *admitter) governedSluicePod(pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" {
		return ""
	}
	container, res := gpuRequest(pod)
	return a.boundRefusal(pod, container, res)
}

// governedUpdate is why a change of a pod in a governed namespace is refused: a pod of
// another scheduler may not gain the GPU taint's toleration (tolerations may be appended to
// an existing pod, and a pending one would then reach GPU nodes through kube-scheduler).
// A DaemonSet's pod without GPUs may, as it may at creation.
func (a *admitter) governedUpdate(pod, old *corev1.Pod) string {
	if slices.Contains(a.schedulerNames, pod.Spec.SchedulerName) || !toleratesGPUTaint(pod) || toleratesGPUTaint(old) {
		return ""
	}
	if container, _ := gpuRequest(pod); container == "" && daemonSetOf(pod) != "" {
		return ""
	}
	return a.tolerationRefusal(pod, "may not be given")
}

func (a *admitter) boundRefusal(pod *corev1.Pod, container, res string) string {
	what := fmt.Sprintf("tolerates taint %s", v1alpha1.GPUTaint)
	if container != "" {
		what = fmt.Sprintf("container %q requests %s", container, res)
	}
	return fmt.Sprintf("the pod sets spec.nodeName %q and %s: a pod bound at creation bypasses every scheduler, and with it its queue's limits. "+
		"Leave spec.nodeName unset, set spec.schedulerName: %s and choose nodes with a nodeSelector or node affinity. %s",
		pod.Spec.NodeName, what, a.schedulerNames[0], a.exemptHint())
}

func (a *admitter) tolerationRefusal(pod *corev1.Pod, verb string) string {
	return fmt.Sprintf("the pod names scheduler %q and %s a toleration of taint %s:%s (a toleration of that key, or of every key): "+
		"the taint keeps GPU nodes for the pods Sluice schedules, and Sluice gives its own pods the toleration itself. "+
		"Remove the toleration, or set spec.schedulerName: %s. %s",
		pod.Spec.SchedulerName, verb, gpuTaint.Key, gpuTaint.Effect, a.schedulerNames[0], a.exemptHint())
}

// exemptHint tells the user where the rule comes from and how it is lifted.
func (a *admitter) exemptHint() string {
	return "A cluster admin exempts a namespace by listing it in the Sluice server's webhook.governGPUs.exemptNamespaces."
}

// tolerationPatch gives a pod Sluice admits the GPU taint's toleration, unless one of its
// own already tolerates the taint (so a reinvocation adds nothing).
func tolerationPatch(pod *corev1.Pod) []patchOp {
	if toleratesGPUTaint(pod) {
		return nil
	}
	if len(pod.Spec.Tolerations) == 0 {
		return []patchOp{{Op: "add", Path: "/spec/tolerations", Value: []corev1.Toleration{gpuToleration}}}
	}
	return []patchOp{{Op: "add", Path: "/spec/tolerations/-", Value: gpuToleration}}
}
