package kube

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// unphasedManifest: a manifest workload whose PodGroup status the scheduler never wrote.
// The scheduler writes no status for a manifest group it places at once (the pods'
// bindings already say so, and a patch per group would be a third of its API writes),
// so such a job's state is read from its pods.
func unphasedManifest(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm == nil && pg.Status.Phase == ""
}

// manifestPods lists, once per namespace, the pods of the unphased manifest groups
// among pgs, keyed by namespace/PodGroup name (the pod grouper's annotation).
func (b *Backend) manifestPods(ctx context.Context, pgs []v1alpha1.PodGroup) (map[string][]corev1.Pod, error) {
	var namespaces []string
	for i := range pgs {
		if unphasedManifest(&pgs[i]) && !slices.Contains(namespaces, pgs[i].Namespace) {
			namespaces = append(namespaces, pgs[i].Namespace)
		}
	}
	out := map[string][]corev1.Pod{}
	for _, ns := range namespaces {
		var pods corev1.PodList
		if err := b.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list Pods in %s: %w", ns, err)
		}
		for _, p := range pods.Items {
			if g := p.Annotations[v1alpha1.PodGroupAnnotation]; g != "" {
				out[ns+"/"+g] = append(out[ns+"/"+g], p)
			}
		}
	}
	return out, nil
}

// stateFromPods sets an unphased manifest job's state from its pods as squeue shows
// it: RUNNING once minMember pods are bound and none has ended, COMPLETED once every
// pod succeeded, FAILED when one failed; otherwise it stays PENDING.
func stateFromPods(j *slurmapi.Job, pg *v1alpha1.PodGroup, pods []corev1.Pod) {
	if !unphasedManifest(pg) || len(pods) == 0 {
		return
	}
	var bound, succeeded int32
	var failed bool
	var nodes []string
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		if !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed = true
		}
		if t := p.Status.StartTime; t != nil && (j.StartTime.IsZero() || t.Time.Before(j.StartTime)) {
			j.StartTime = t.Time
		}
	}
	switch {
	case failed:
		j.State, j.Reason = []string{"FAILED"}, "NonZeroExitCode"
	case succeeded > 0 && succeeded == int32(len(pods)):
		j.State, j.Reason = []string{"COMPLETED"}, "None"
	case bound >= max(pg.Spec.MinMember, 1):
		j.State, j.Reason = []string{"RUNNING"}, "None"
	default:
		return
	}
	slices.Sort(nodes)
	j.NodeNames, j.NodeList = nodes, slurmapi.HostList(nodes)
	j.TRESAlloc = j.TRESReq
}
