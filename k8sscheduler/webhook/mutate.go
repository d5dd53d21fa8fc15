package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
)

// patchOp is one RFC 6902 JSON patch operation: the webhook adds, and removes what
// only Sluice may write.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// queueFor picks a pod's queue: its own sluice.dev/queue label, else its
// kai.scheduler/queue label, else its namespace's labels in the same order,
// else fallback.
func queueFor(pod *corev1.Pod, namespaceLabels map[string]string, fallback string) string {
	for _, labels := range []map[string]string{pod.Labels, namespaceLabels} {
		for _, key := range []string{v1alpha1.QueueLabel, v1alpha1.KAIQueueLabel} {
			if q := labels[key]; q != "" {
				return q
			}
		}
	}
	return fallback
}

// queuePatch sets the sluice.dev/queue label to queue unless the pod
// already carries it.
func queuePatch(pod *corev1.Pod, queue string) []patchOp {
	if pod.Labels[v1alpha1.QueueLabel] != "" {
		return nil
	}
	if pod.Labels == nil {
		return []patchOp{{Op: "add", Path: "/metadata/labels", Value: map[string]string{v1alpha1.QueueLabel: queue}}}
	}
	// An empty sluice.dev/queue label is replaced too: "add" on an existing
	// member overwrites it.
	return []patchOp{{Op: "add", Path: "/metadata/labels/" + escapePointer(v1alpha1.QueueLabel), Value: queue}}
}

// derivedGroup is the PodGroup the pod grouper would give the pod (podgrouper.AtAdmission,
// with the owner reads of the pod's workload remembered by a.owners), or nil when the pod
// names its group itself or the group cannot be named now (owners unreadable, a bare pod
// with only generateName): the pod is then admitted without it and the grouper names it
// later, as it always could. A group name marked as derived is derived again: the mark is
// Sluice's, and on a reinvocation it is the webhook's own. pod.Namespace must be set.
func (a *admitter) derivedGroup(ctx context.Context, pod *corev1.Pod, nsLabels map[string]string) *v1alpha1.PodGroup {
	explicit := pod.Annotations[v1alpha1.PodGroupAnnotation] != "" && pod.Annotations[v1alpha1.PodGroupDerivedAnnotation] != "true"
	if explicit || (a.owners == nil && len(pod.OwnerReferences) > 0) {
		return nil
	}
	if pod.Annotations[v1alpha1.PodGroupDerivedAnnotation] == "true" {
		unmarked := *pod
		unmarked.Annotations = maps.Clone(pod.Annotations)
		delete(unmarked.Annotations, v1alpha1.PodGroupAnnotation)
		delete(unmarked.Annotations, v1alpha1.PodGroupDerivedAnnotation)
		pod = &unmarked
	}
	pg, err := a.owners.atAdmission(ctx, pod, nsLabels)
	if err != nil {
		a.log.Error(err, "webhook: PodGroup left to the pod grouper", "pod", pod.Namespace+"/"+pod.Name)
		return nil
	}
	return pg
}

// groupQueue is the queue of a derived group, "" for none.
func groupQueue(pg *v1alpha1.PodGroup) string {
	if pg == nil {
		return ""
	}
	return pg.Spec.Queue
}

// ownedPatch removes every Sluice-owned label and annotation (v1alpha1.OwnedKey) the pod
// came with: job ids, derived group marks, GPU assignments and the like are Sluice's to
// write, and a made-up one could name another team's job or claim GPUs it was not given.
// What the webhook sets itself (groupPatch) is added after.
// keepJobID spares the job id the webhook itself gave this pod on an earlier call for the
// same request (a reinvocation).
func ownedPatch(pod *corev1.Pod, keepJobID bool) []patchOp {
	var ops []patchOp
	for _, m := range []struct {
		path string
		keys map[string]string
	}{{"/metadata/labels/", pod.Labels}, {"/metadata/annotations/", pod.Annotations}} {
		keys := make([]string, 0, len(m.keys))
		for k := range m.keys {
			if v1alpha1.OwnedKey(k) && (!keepJobID || m.path != "/metadata/labels/" || k != v1alpha1.JobIDLabel) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			ops = append(ops, patchOp{Op: "remove", Path: m.path + escapePointer(k)})
		}
	}
	return ops
}

// groupPatch names the pod's derived PodGroup pg on the pod, marked as derived so the pod
// grouper creates the group and leaves the pod alone.
//
// A bare pod also gets its job id (sluice.dev/job-id) when the webhook has an id source,
// which makes it a group of one (jobstate.GroupOfOne) and names its group
// (podgrouper.GroupOfOneName): ids are never given twice, so a later pod of the same name
// never meets this one's group. Without an id (no source, a dry run) the pod is left to
// the pod grouper, which names the group by the pod's UID. Queue ops come first, so the
// labels map exists.
func (a *admitter) groupPatch(ctx context.Context, pod *corev1.Pod, pg *v1alpha1.PodGroup, keepJobID, dryRun bool) []patchOp {
	if pg == nil {
		return nil
	}
	var ops []patchOp
	name := pg.Name
	if len(pod.OwnerReferences) == 0 {
		// A bare pod has no UID yet: its job id is what names its group uniquely.
		id := v1alpha1.JobIDOf(pod.Labels)
		if !keepJobID {
			ops, id = a.jobIDPatch(ctx, pod, dryRun)
		}
		if id == 0 {
			return ops // unnumbered: the pod grouper names its group by the pod's UID
		}
		name = podgrouper.GroupOfOneName(pod.Name, id)
	}
	if name == "" {
		return ops
	}
	add := map[string]string{v1alpha1.PodGroupAnnotation: name, v1alpha1.PodGroupDerivedAnnotation: "true"}
	if len(pod.Annotations) == 0 {
		return append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: add})
	}
	return append(ops,
		patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.PodGroupAnnotation), Value: name},
		patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.PodGroupDerivedAnnotation), Value: "true"},
	)
}

// jobIDPatch numbers a bare pod (any job id it came with was removed by ownedPatch: ids
// are Sluice's to give). Without an id source, on a dry run, or when no id can be had, the
// pod is left unnumbered and the pod grouper writes its PodGroup as for any pod.
func (a *admitter) jobIDPatch(ctx context.Context, pod *corev1.Pod, dryRun bool) ([]patchOp, uint32) {
	if len(pod.OwnerReferences) > 0 || a.jobIDs == nil || dryRun {
		return nil, 0
	}
	id, err := a.jobIDs(ctx)
	if err != nil {
		a.log.Error(err, "webhook: bare pod left to the pod grouper: no job id", "pod", pod.Namespace+"/"+pod.Name)
		return nil, 0
	}
	a.given.add(pod.Namespace+"/"+pod.Name, id, time.Now())
	return []patchOp{{Op: "add", Path: "/metadata/labels/" + escapePointer(v1alpha1.JobIDLabel), Value: v1alpha1.FormatJobID(id)}}, id
}

// gpuEnv is the environment every container of a shared-GPU pod gets: each
// variable reads, through the downward API, an annotation the scheduler
// writes in the same request as the binding, so the kubelet resolves it when
// the container starts, after the pod is bound. NVIDIA_VISIBLE_DEVICES names
// the device of the GPU's reservation pod (the device plugin's choice).
//
// The CUDA_MPS_* limits are written only on nodes labelled sluice.dev/mps
// (an MPS control daemon runs there); elsewhere the annotations are absent,
// the variables resolve empty and CUDA, finding no MPS daemon, ignores them:
// the portion and memory are then accounted, not enforced.
//
// Pods asking for whole GPUs get nothing: the device plugin chose their
// devices and sets NVIDIA_VISIBLE_DEVICES itself.
var gpuEnv = []corev1.EnvVar{
	annotationEnv(v1alpha1.VisibleDevicesEnv, v1alpha1.VisibleDevicesAnnotation),
	annotationEnv(v1alpha1.GPUPortionEnv, v1alpha1.GPUPortionAnnotation),
	annotationEnv(v1alpha1.MPSThreadPercentageEnv, v1alpha1.MPSThreadPercentageAnnotation),
	annotationEnv(v1alpha1.MPSMemoryLimitEnv, v1alpha1.MPSMemoryLimitAnnotation),
}

func annotationEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1",
		FieldPath:  fmt.Sprintf("metadata.annotations['%s']", annotation),
	}}}
}

// envPatch adds gpuEnv to every init and regular container, or only to the one named
// only (KAI's gpu-fraction-container-name), leaving alone a variable the container
// already sets itself.
func envPatch(pod *corev1.Pod, only string) []patchOp {
	var ops []patchOp
	for _, group := range []struct {
		path       string
		containers []corev1.Container
	}{
		{"/spec/initContainers", pod.Spec.InitContainers},
		{"/spec/containers", pod.Spec.Containers},
	} {
		for i, c := range group.containers {
			if only != "" && c.Name != only {
				continue
			}
			var missing []corev1.EnvVar
			for _, v := range gpuEnv {
				if !setsEnv(c, v.Name) {
					missing = append(missing, v)
				}
			}
			if len(missing) == 0 {
				continue
			}
			envPath := fmt.Sprintf("%s/%d/env", group.path, i)
			if len(c.Env) == 0 {
				ops = append(ops, patchOp{Op: "add", Path: envPath, Value: missing})
				continue
			}
			for _, v := range missing {
				ops = append(ops, patchOp{Op: "add", Path: envPath + "/-", Value: v})
			}
		}
	}
	return ops
}

func setsEnv(c corev1.Container, name string) bool {
	for _, v := range c.Env {
		if v.Name == name {
			return true
		}
	}
	return false
}

// escapePointer escapes a key for use as one JSON pointer token (RFC 6901).
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
