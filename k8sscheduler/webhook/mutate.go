package webhook

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// patchOp is one RFC 6902 JSON patch operation; the webhook only adds.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
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

// groupPatch names the pod's PodGroup at admission (podgrouper.AtAdmission, with the
// owner reads of the pod's workload remembered by a.owners), marked as derived so the
// pod grouper creates the group and leaves the pod alone. When the group cannot be
// named now (owners unreadable, a bare pod with only generateName) the pod is admitted
// without it and the grouper names it later, as it always could.
//
// A bare pod also gets its job id (sluice.dev/job-id) when the webhook has an id source,
// which makes it a group of one (v1alpha1.GroupOfOne). Queue ops come first, so the labels
// map exists. A dry run takes no id.
func (a *admitter) groupPatch(ctx context.Context, pod *corev1.Pod, namespace string, nsLabels map[string]string, dryRun bool) []patchOp {
	if pod.Annotations[v1alpha1.PodGroupAnnotation] != "" || (a.owners == nil && len(pod.OwnerReferences) > 0) {
		return nil
	}
	named := *pod
	named.Namespace = namespace // a create's object may leave it to the request
	pg, err := a.owners.atAdmission(ctx, &named, nsLabels)
	if err != nil {
		a.log.Info("webhook: PodGroup left to the pod grouper", "pod", namespace+"/"+pod.Name, "err", err)
		return nil
	}
	if pg == nil {
		return nil
	}
	ops := a.jobIDPatch(ctx, &named, dryRun)
	add := map[string]string{v1alpha1.PodGroupAnnotation: pg.Name, v1alpha1.PodGroupDerivedAnnotation: "true"}
	if pod.Annotations == nil {
		return append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: add})
	}
	return append(ops,
		patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.PodGroupAnnotation), Value: pg.Name},
		patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.PodGroupDerivedAnnotation), Value: "true"},
	)
}

// jobIDPatch numbers a bare pod, replacing any job id it came with: ids are Sluice's to
// give, and a made-up one could name another job in the ledger. Without an id source, on
// a dry run, or when no id can be had, the pod is left unnumbered (a job id it came with
// is removed) and the pod grouper writes its PodGroup as for any pod.
func (a *admitter) jobIDPatch(ctx context.Context, pod *corev1.Pod, dryRun bool) []patchOp {
	if len(pod.OwnerReferences) > 0 {
		return nil
	}
	path := "/metadata/labels/" + escapePointer(v1alpha1.JobIDLabel)
	unnumbered := []patchOp(nil)
	if _, ok := pod.Labels[v1alpha1.JobIDLabel]; ok {
		unnumbered = []patchOp{{Op: "remove", Path: path}}
	}
	if a.jobIDs == nil || dryRun {
		return unnumbered
	}
	id, err := a.jobIDs(ctx)
	if err != nil {
		a.log.Info("webhook: bare pod left to the pod grouper: no job id", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return unnumbered
	}
	return []patchOp{{Op: "add", Path: path, Value: strconv.FormatUint(uint64(id), 10)}}
}

// gpuEnv is the environment every container of a GPU pod gets: each
// variable reads, through the downward API, an annotation the scheduler
// writes in the same request as the binding, so the kubelet resolves it when
// the container starts, after the pod is bound.
//
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is deliberately not set: it only acts
// when the node runs an MPS control daemon whose pipe directory is mounted
// into the container, it wants a percentage ("25") where the downward API
// can only copy an annotation verbatim, and a memory-based request has no
// thread share. Setting it would promise compute isolation that Sluice's
// fractions (a scheduling share, as in KAI) do not give.
var gpuEnv = []corev1.EnvVar{
	annotationEnv(v1alpha1.VisibleDevicesEnv, v1alpha1.VisibleDevicesAnnotation),
	annotationEnv(v1alpha1.GPUPortionEnv, v1alpha1.GPUPortionAnnotation),
}

func annotationEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1",
		FieldPath:  fmt.Sprintf("metadata.annotations['%s']", annotation),
	}}}
}

// envPatch adds gpuEnv to every init and regular container, leaving alone a
// variable the container already sets itself.
func envPatch(pod *corev1.Pod) []patchOp {
	var ops []patchOp
	for _, group := range []struct {
		path       string
		containers []corev1.Container
	}{
		{"/spec/initContainers", pod.Spec.InitContainers},
		{"/spec/containers", pod.Spec.Containers},
	} {
		for i, c := range group.containers {
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
