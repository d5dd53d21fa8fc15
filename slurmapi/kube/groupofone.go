package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// A group of one (v1alpha1.GroupOfOne: a bare pod the webhook named and numbered) has
// no PodGroup until the scheduler has something to write on one, so a pod placed at
// once never gets one. Until then v1alpha1.ImpliedPodGroup stands for it here as
// everywhere: the same key and job id the written one will have, so squeue shows the
// same job before and after, and once written the PodGroup wins.

// numberedPods selects the pods that carry a job id but were not made for a Slurm job
// (those are read through their PodGroup, which always exists): groups of one are among
// them, so one List finds every job that has no PodGroup yet.
func numberedPods(id uint32) client.MatchingLabelsSelector {
	op, values := selection.Exists, []string(nil)
	if id != 0 {
		op, values = selection.Equals, []string{strconv.FormatUint(uint64(id), 10)}
	}
	numbered, _ := labels.NewRequirement(v1alpha1.JobIDLabel, op, values)
	notSlurm, _ := labels.NewRequirement(SlurmPodLabel, selection.DoesNotExist, nil)
	return client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*numbered, *notSlurm)}
}

// groupKey is how a group's pods find it: namespace/PodGroup name.
func groupKey(namespace, name string) string { return namespace + "/" + name }

// impliedGroups are the implied PodGroups of the groups of one among pods whose PodGroup
// is not among written, sorted by key, with each one's pod under its key.
func impliedGroups(pods []corev1.Pod, written []v1alpha1.PodGroup) ([]v1alpha1.PodGroup, map[string][]corev1.Pod) {
	have := make(map[string]bool, len(written))
	for i := range written {
		have[groupKey(written[i].Namespace, written[i].Name)] = true
	}
	var out []v1alpha1.PodGroup
	podsOf := map[string][]corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		key := groupKey(p.Namespace, p.Annotations[v1alpha1.PodGroupAnnotation])
		if !v1alpha1.GroupOfOne(p) || have[key] {
			continue
		}
		have[key] = true
		out = append(out, *v1alpha1.ImpliedPodGroup(p))
		podsOf[key] = []corev1.Pod{*p}
	}
	slices.SortFunc(out, func(a, b v1alpha1.PodGroup) int {
		return strings.Compare(groupKey(a.Namespace, a.Name), groupKey(b.Namespace, b.Name))
	})
	return out, podsOf
}

// unwrittenGroups lists the pods numbered id (0: any) and returns the implied groups of
// the groups of one among them whose PodGroup is not in written: one List of pods.
func unwrittenGroups(ctx context.Context, c client.Reader, id uint32, written []v1alpha1.PodGroup) ([]v1alpha1.PodGroup, map[string][]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, numberedPods(id)); err != nil {
		return nil, nil, fmt.Errorf("list numbered Pods: %w", err)
	}
	implied, podsOf := impliedGroups(pods.Items, written)
	return implied, podsOf, nil
}

// unwrittenGroup is the implied group of the group of one numbered id, for a job id no
// PodGroup carries, with its pod; nil when no group of one has the id either.
func unwrittenGroup(ctx context.Context, c client.Reader, id uint32) (*v1alpha1.PodGroup, *corev1.Pod, error) {
	implied, podsOf, err := unwrittenGroups(ctx, c, id, nil)
	if err != nil || len(implied) == 0 {
		return nil, nil, err
	}
	pg := &implied[0]
	return pg, &podsOf[groupKey(pg.Namespace, pg.Name)][0], nil
}

// groupOfOnePod is the pod pg stands for when pg is a group of one's PodGroup, implied
// or written (ImpliedPodGroup makes it owned by its pod); nil for every other group.
func (b *Backend) groupOfOnePod(ctx context.Context, pg *v1alpha1.PodGroup) (*corev1.Pod, error) {
	ref := v1alpha1.OwningPod(pg)
	if pg.Spec.Slurm != nil || ref == nil {
		return nil, nil
	}
	var pod corev1.Pod
	err := b.c.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: ref.Name}, &pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil // gone, the group with it shortly: nothing to cancel, refused as before
	case err != nil:
		return nil, fmt.Errorf("read pod %s/%s: %w", pg.Namespace, ref.Name, err)
	case pod.UID != ref.UID || !v1alpha1.GroupOfOne(&pod):
		return nil, nil // its pod is gone (another took its name), or a pod grouper's group of a bare pod
	}
	return &pod, nil
}

// cancelGroupOfOne is scancel of a group of one: its pod is deleted, with the pod's
// usual grace period (the kubelet sends SIGTERM, then SIGKILL, as slurmd does), and a
// written PodGroup goes with it (owner reference). An ended pod stays, as the record of
// how the job ended.
func (b *Backend) cancelGroupOfOne(ctx context.Context, id uint32, pod *corev1.Pod) error {
	if err := cancellable(id, pod); err != nil {
		return err
	}
	err := b.c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	switch {
	case apierrors.IsNotFound(err):
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %d already ended: its pod %s/%s is gone", id, pod.Namespace, pod.Name)
	case err != nil:
		return fmt.Errorf("delete pod %s/%s of job %d: %w", pod.Namespace, pod.Name, id, err)
	}
	return nil
}

// cancellable refuses scancel of a group of one that ended or is being deleted.
func cancellable(id uint32, pod *corev1.Pod) error {
	switch {
	case pod.DeletionTimestamp != nil:
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %d is already being cancelled: its pod %s/%s is being deleted", id, pod.Namespace, pod.Name)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %d already ended (pod %s/%s %s)", id, pod.Namespace, pod.Name, pod.Status.Phase)
	}
	return nil
}
