package jobstate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Identity: which job a pod or a job id is. A job is stood for by one PodGroup, which
// readers hand to Derive with the job's pods:
//
//   - a PodGroup object: a Slurm job, a manifest workload's group (a Job, a JobSet, a
//     gang), or a bare pod's group once written;
//   - an implied PodGroup: a bare pod that admission named and numbered needs no
//     PodGroup object until the scheduler has something to write on one, so most never
//     get one; Implied builds the group it stands for, with the key, job id and submit
//     time the written one will have, so every view shows the same job before and after.
//
//   - a batched PodGroup: a pending Slurm job the REST API acknowledged in a submit batch
//     (BatchedPodGroup), whose object is written when it starts or is changed;
//     the reader that holds it builds its PodGroup as the stored one will be and hands it
//     in with the stored groups.
//
// Kind says which of the three a job's group is.

// Kind is where a job's PodGroup comes from.
type Kind string

const (
	// Stored: a PodGroup object in the cluster (or, for the Slurm API, one it holds to
	// store).
	Stored Kind = "PodGroup"
	// ImpliedByPod: no PodGroup object; the job's one bare pod implies it (Implied).
	ImpliedByPod Kind = "ImpliedByPod"
	// Batched: no PodGroup object yet; a pending Slurm job read from its submit batch.
	Batched Kind = "Batched"
)

// KindOf is where a PodGroup handed to Assemble comes from: a batch's copy or an object.
func KindOf(pg *v1alpha1.PodGroup) Kind {
	if IsBatched(pg) {
		return Batched
	}
	return Stored
}

// Job is one job: its group, where the group comes from, and the pods that belong to it
// (any order; ended and terminating ones included).
type Job struct {
	Kind  Kind
	Group *v1alpha1.PodGroup
	Pods  []*corev1.Pod
}

// Key is the job's group key, namespace/name: what its pods name in PodGroupAnnotation.
func (j *Job) Key() string { return GroupKey(j.Group.Namespace, j.Group.Name) }

// ID is the job's id; 0 when its group carries none.
func (j *Job) ID() uint32 { return v1alpha1.JobIDOf(j.Group.Labels) }

// View is the job's state by the one rule table.
func (j *Job) View(now time.Time) View { return Derive(j.Group, j.Pods, now) }

// BarePod is the pod a bare pod's job is made of, implied or written, while that pod
// exists: the one object to act on (scancel deletes it, its log is the job's). nil for
// every other job, and for a bare pod's group whose pod is gone or was replaced by a
// pod of the same name.
func (j *Job) BarePod() *corev1.Pod {
	ref := v1alpha1.OwningPod(j.Group)
	if j.Group.Spec.Slurm != nil || ref == nil {
		return nil
	}
	for _, p := range j.Pods {
		if p.UID == ref.UID && Implied(p) != nil {
			return p
		}
	}
	return nil
}

// GroupKey is the key of group name in namespace.
func GroupKey(namespace, name string) string { return namespace + "/" + name }

// PodGroupKey is the key of the group pod p names; "" when it names none (yet).
func PodGroupKey(p *corev1.Pod) string {
	g := p.Annotations[v1alpha1.PodGroupAnnotation]
	if g == "" {
		return ""
	}
	return GroupKey(p.Namespace, g)
}

// Implied is the PodGroup bare pod p stands for when p needs no PodGroup object (a bare
// pod admission named and numbered); nil for every other pod, whose job is its group
// object.
func Implied(p *corev1.Pod) *v1alpha1.PodGroup {
	if !GroupOfOne(p) {
		return nil
	}
	return ImpliedPodGroup(p)
}

// Assemble is the jobs of groups (each once, first wins) and of the pods that imply a
// group none of groups is, each with its pods (those naming its group), in groups'
// order, then the implied ones by key.
func Assemble(groups []v1alpha1.PodGroup, pods []corev1.Pod) []Job {
	podsOf := map[string][]*corev1.Pod{}
	for i := range pods {
		if k := PodGroupKey(&pods[i]); k != "" {
			podsOf[k] = append(podsOf[k], &pods[i])
		}
	}
	have := make(map[string]bool, len(groups))
	out := make([]Job, 0, len(groups))
	for i := range groups {
		k := GroupKey(groups[i].Namespace, groups[i].Name)
		if have[k] {
			continue
		}
		have[k] = true
		out = append(out, Job{Kind: KindOf(&groups[i]), Group: &groups[i], Pods: podsOf[k]})
	}
	var implied []Job
	for i := range pods {
		k := PodGroupKey(&pods[i])
		if have[k] {
			continue
		}
		if ig := Implied(&pods[i]); ig != nil {
			have[k] = true
			implied = append(implied, Job{Kind: ImpliedByPod, Group: ig, Pods: podsOf[k]})
		}
	}
	slices.SortFunc(implied, func(a, b Job) int { return strings.Compare(a.Key(), b.Key()) })
	return append(out, implied...)
}

// Read is the jobs of groups with their pods, read from r (a client or an informer
// cache): each group namespace's pods are listed once. With id 0 (every job), or when
// groups is empty (job id has no group object), it also finds the jobs only a bare pod
// implies: the pods numbered id (0: any) that are not a Slurm job's.
func Read(ctx context.Context, r client.Reader, groups []v1alpha1.PodGroup, id uint32) ([]Job, error) {
	var namespaces []string
	for i := range groups {
		if !slices.Contains(namespaces, groups[i].Namespace) {
			namespaces = append(namespaces, groups[i].Namespace)
		}
	}
	var pods []corev1.Pod
	for _, ns := range namespaces {
		var list corev1.PodList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list Pods in %s: %w", ns, err)
		}
		pods = append(pods, list.Items...)
	}
	if id == 0 || len(groups) == 0 {
		var list corev1.PodList
		if err := r.List(ctx, &list, numberedPods(id)); err != nil {
			return nil, fmt.Errorf("list numbered Pods: %w", err)
		}
		for _, p := range list.Items {
			if !slices.Contains(namespaces, p.Namespace) { // listed above
				pods = append(pods, p)
			}
		}
	}
	return Assemble(groups, pods), nil
}

// Find is job id: its PodGroup object, else the group a bare pod numbered id implies;
// found is false when neither exists.
func Find(ctx context.Context, r client.Reader, id uint32) (job Job, found bool, err error) {
	var list v1alpha1.PodGroupList
	if err := r.List(ctx, &list, client.MatchingLabels{v1alpha1.JobIDLabel: v1alpha1.FormatJobID(id)}); err != nil {
		return Job{}, false, fmt.Errorf("list the PodGroup of job %d: %w", id, err)
	}
	jobs, err := Read(ctx, r, list.Items, id)
	if err != nil || len(jobs) == 0 {
		return Job{}, false, err
	}
	return jobs[0], true, nil
}

// numberedPods selects the pods that carry a job id (id: that one; 0: any) and were not
// made for a Slurm job (whose group always exists), so one List finds every job a bare
// pod implies.
func numberedPods(id uint32) client.MatchingLabelsSelector {
	op, values := selection.Exists, []string(nil)
	if id != 0 {
		op, values = selection.Equals, []string{v1alpha1.FormatJobID(id)}
	}
	numbered, _ := labels.NewRequirement(v1alpha1.JobIDLabel, op, values)
	notSlurm, _ := labels.NewRequirement(v1alpha1.SlurmJobPodLabel, selection.DoesNotExist, nil)
	return client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*numbered, *notSlurm)}
}
