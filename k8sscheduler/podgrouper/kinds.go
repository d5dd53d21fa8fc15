package podgrouper

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

// Grouping rules that follow KAI Scheduler's documented behaviour (docs/kai-compatibility.md).

// skippedTopOwner reports whether a top owner only makes workloads (an Argo Workflow,
// a CronJob): the group forms around the workload below it.
func skippedTopOwner(apiGroup, kind string) bool {
	return (apiGroup == "argoproj.io" && kind == "Workflow") || (apiGroup == "batch" && kind == "CronJob")
}

// jobSetReplicatedJobLabel names the replicated job of a JobSet's pod.
const jobSetReplicatedJobLabel = "jobset.sigs.k8s.io/replicatedjob-name"

// inOrder reports whether a JobSet starts its replicated jobs one after the other
// (spec.startupPolicy.startupPolicyOrder InOrder): the next job's pods are created only
// once the previous job runs, so a gang of the whole set would wait for ever.
func inOrder(js *unstructured.Unstructured) bool {
	order, _, _ := unstructured.NestedString(js.Object, "spec", "startupPolicy", "startupPolicyOrder")
	return order == "InOrder"
}

// jobSetStepGroup is the gang of one replicated job of an InOrder JobSet: its replicas
// times its pods per Job, named after the set and the replicated job.
func jobSetStepGroup(pod *corev1.Pod, js *unstructured.Unstructured) (group, error) {
	name := pod.Labels[jobSetReplicatedJobLabel]
	if name == "" {
		return group{}, fmt.Errorf("pod %s/%s of JobSet %s has no %s label", pod.Namespace, pod.Name, js.GetName(), jobSetReplicatedJobLabel)
	}
	jobs, _, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	if err != nil {
		return group{}, fieldError(js, err)
	}
	n := int64(0)
	for _, j := range jobs {
		rj, ok := j.(map[string]any)
		if !ok || rj["name"] != name {
			continue
		}
		replicas, err := intField(rj, 1, "replicas")
		if err != nil {
			return group{}, fieldError(js, err)
		}
		perJob, err := jobPods(rj, "template", "spec")
		if err != nil {
			return group{}, fieldError(js, err)
		}
		n = replicas * perJob
	}
	return group{
		name:      groupName(js.GetName(), uidPart(js.GetUID()), name),
		owner:     ownerRef(js.GetAPIVersion(), js.GetKind(), js.GetName(), js.GetUID()),
		minMember: int32(max(1, min(n, 1<<30))),
	}, nil
}

// kubeflowMinMember is a Kubeflow job's runPolicy.schedulingPolicy.minAvailable when it
// states one (MPIJob's elastic minimum, as KAI reads it), else every replica of every role.
func kubeflowMinMember(job *unstructured.Unstructured) (int64, error) {
	n, err := intField(job.Object, 0, "spec", "runPolicy", "schedulingPolicy", "minAvailable")
	if err != nil || n > 0 {
		return n, err
	}
	return kubeflowReplicas(job)
}

// priorityClassOf is a workload's PriorityClass as KAI reads it: a priorityClassName label
// on an owner (the nearest that has one), else on the pod, else the pod's own
// spec.priorityClassName. The webhook gives the pod that class's priority.
func priorityClassOf(pod *corev1.Pod, owners []*unstructured.Unstructured) string {
	for _, o := range owners {
		if c := o.GetLabels()[kai.PriorityClassLabel]; c != "" {
			return c
		}
	}
	if c := pod.Labels[kai.PriorityClassLabel]; c != "" {
		return c
	}
	return pod.Spec.PriorityClassName
}

// preemptibilityOf is KAI's kai.scheduler/preemptibility label on an owner (the nearest
// that has a valid one) or the pod; "" when none says: the priority decides then.
func preemptibilityOf(pod *corev1.Pod, owners []*unstructured.Unstructured) v1alpha1.Preemptibility {
	labels := []map[string]string{}
	for _, o := range owners {
		labels = append(labels, o.GetLabels())
	}
	for _, l := range append(labels, pod.Labels) {
		switch p := v1alpha1.Preemptibility(l[kai.PreemptibilityLabel]); p {
		case v1alpha1.Preemptible, v1alpha1.NonPreemptible:
			return p
		}
	}
	return ""
}
