package podgrouper

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lwsGroupIndexLabel marks which replica (leader plus workers) of a
// LeaderWorkerSet a pod belongs to; each replica is its own gang.
const lwsGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index"

// group is what the owner chain decides: the group's name, the object that
// owns it (so garbage collection removes it with the workload) and its
// gang size.
type group struct {
	name      string
	owner     metav1.OwnerReference
	minMember int32
}

// groupKey picks the group for pod from its top owner's kind.
func groupKey(pod *corev1.Pod, owners []*unstructured.Unstructured) (group, error) {
	if len(owners) == 0 {
		return podGroupOf(pod), nil
	}
	top := owners[len(owners)-1]
	apiGroup := top.GroupVersionKind().Group
	kind := top.GetKind()
	var (
		n   int64
		err error
	)
	switch {
	case apiGroup == "batch" && kind == "Job":
		n, err = jobPods(top.Object, "spec")
	case apiGroup == "jobset.x-k8s.io" && kind == "JobSet":
		if inOrder(top) {
			return jobSetStepGroup(pod, top)
		}
		n, err = jobSetPods(top)
	case apiGroup == "kubeflow.org":
		n, err = kubeflowMinMember(top)
	case apiGroup == "apps" && kind == "Deployment":
		// Each replica is its own job, placed and preempted on its own, as KAI groups them.
		return podGroupOf(pod), nil
	case apiGroup == "ray.io" && kind == "RayCluster":
		n, err = rayPods(top.Object, "spec")
	case apiGroup == "ray.io" && kind == "RayJob":
		n, err = rayPods(top.Object, "spec", "rayClusterSpec")
	case apiGroup == "leaderworkerset.x-k8s.io" && kind == "LeaderWorkerSet":
		return lwsGroup(pod, top)
	case skippedTopOwner(apiGroup, kind) && len(owners) > 1:
		// A workload a workflow or a schedule made (a PyTorchJob in an Argo step, a
		// CronJob's Job) is grouped as if it stood alone, as KAI groups it.
		return groupKey(pod, owners[:len(owners)-1])
	case apiGroup == "argoproj.io" && kind == "Workflow":
		// Each step of a workflow is its own pod, scheduled on its own; the workflow's
		// UID keeps its steps' names apart from a recreated workflow's.
		g := podGroupOf(pod)
		g.name = groupName(pod.Name, uidPart(top.GetUID()), "")
		return g, nil
	default:
		n = 1
	}
	if err != nil {
		return group{}, fieldError(top, err)
	}
	return group{
		name:      groupName(top.GetName(), uidPart(top.GetUID()), ""),
		owner:     ownerRef(top.GetAPIVersion(), kind, top.GetName(), top.GetUID()),
		minMember: int32(max(1, min(n, 1<<30))),
	}, nil
}

// podGroupOf is a group of one: the pod itself. At admission a bare pod has no UID yet:
// its group is unnamed until the webhook numbers it (GroupOfOneName).
func podGroupOf(pod *corev1.Pod) group {
	return group{
		name:      groupName(pod.Name, uidPart(pod.UID), ""),
		owner:     ownerRef("v1", "Pod", pod.Name, pod.UID),
		minMember: 1,
	}
}

// jobPods is how many pods of a batch/v1 Job spec (at obj[path...]) run at
// once: parallelism (default 1), capped by completions when set.
func jobPods(obj map[string]any, path ...string) (int64, error) {
	parallelism, err := intField(obj, 1, append(path, "parallelism")...)
	if err != nil {
		return 0, err
	}
	completions, err := intField(obj, -1, append(path, "completions")...)
	if err != nil {
		return 0, err
	}
	if completions >= 0 {
		return min(parallelism, completions), nil
	}
	return parallelism, nil
}

// jobSetPods sums replicas x pods-per-Job over a JobSet's replicatedJobs.
func jobSetPods(js *unstructured.Unstructured) (int64, error) {
	jobs, _, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, j := range jobs {
		rj, ok := j.(map[string]any)
		if !ok {
			continue
		}
		replicas, err := intField(rj, 1, "replicas")
		if err != nil {
			return 0, err
		}
		perJob, err := jobPods(rj, "template", "spec")
		if err != nil {
			return 0, err
		}
		total += replicas * perJob
	}
	return total, nil
}

// kubeflowReplicas sums the replicas of every role of a Kubeflow training
// job: PyTorchJob (pytorchReplicaSpecs), MPIJob (mpiReplicaSpecs), TFJob,
// XGBoostJob, PaddleJob and JAXJob all name the map <kind>ReplicaSpecs.
func kubeflowReplicas(job *unstructured.Unstructured) (int64, error) {
	spec, _, err := unstructured.NestedMap(job.Object, "spec")
	if err != nil {
		return 0, err
	}
	var total int64
	for field, v := range spec {
		roles, ok := v.(map[string]any)
		if !ok || !strings.HasSuffix(field, "ReplicaSpecs") {
			continue
		}
		for _, r := range roles {
			role, ok := r.(map[string]any)
			if !ok {
				continue
			}
			n, err := intField(role, 1, "replicas")
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}

// rayPods is the head plus every worker group's minimum (minReplicas, else
// replicas) times its hosts per replica, for the RayCluster spec at path.
func rayPods(obj map[string]any, path ...string) (int64, error) {
	workers, _, err := unstructured.NestedSlice(obj, append(path, "workerGroupSpecs")...)
	if err != nil {
		return 0, err
	}
	total := int64(1) // the head
	for _, w := range workers {
		wg, ok := w.(map[string]any)
		if !ok {
			continue
		}
		replicas, err := intField(wg, 0, "replicas")
		if err != nil {
			return 0, err
		}
		minReplicas, err := intField(wg, replicas, "minReplicas")
		if err != nil {
			return 0, err
		}
		hosts, err := intField(wg, 1, "numOfHosts")
		if err != nil {
			return 0, err
		}
		total += minReplicas * hosts
	}
	return total, nil
}

// lwsGroup makes one gang per LeaderWorkerSet replica: its leader and
// workers, size pods in all.
func lwsGroup(pod *corev1.Pod, lws *unstructured.Unstructured) (group, error) {
	size, err := intField(lws.Object, 1, "spec", "leaderWorkerTemplate", "size")
	if err != nil {
		return group{}, fieldError(lws, err)
	}
	return group{
		name:      groupName(lws.GetName(), uidPart(lws.GetUID()), pod.Labels[lwsGroupIndexLabel]),
		owner:     ownerRef(lws.GetAPIVersion(), lws.GetKind(), lws.GetName(), lws.GetUID()),
		minMember: int32(max(1, min(size, 1<<30))),
	}, nil
}

// intField reads an integer at path, or def when it is absent.
func intField(obj map[string]any, def int64, path ...string) (int64, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found || v == nil {
		return def, err
	}
	switch n := v.(type) {
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case int:
		return int64(n), nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	}
	return 0, fmt.Errorf("%s is %v, not an integer", strings.Join(path, "."), v)
}
