package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// groupPods lists, once per namespace, the pods of the groups in pgs, keyed by
// namespace/PodGroup name (the annotation the pod grouper and the Slurm API put on
// them): the job read model (jobstate) needs them to say whether a job's run ended.
func (b *Backend) groupPods(ctx context.Context, pgs []v1alpha1.PodGroup) (map[string][]corev1.Pod, error) {
	var namespaces []string
	for i := range pgs {
		if !slices.Contains(namespaces, pgs[i].Namespace) {
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

// setView sets the job's state, reason, times, exit code and nodes from the one job read
// model over its PodGroup and pods; the Slurm API adds only why a pending job waits.
func setView(j *slurmapi.Job, pg *v1alpha1.PodGroup, pods []corev1.Pod) {
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	v := jobstate.Derive(pg, ptrs, time.Now())
	j.State, j.Reason = []string{string(v.State)}, v.Reason
	if v.Requeued {
		j.State = append(j.State, string(jobstate.Requeued))
	}
	if v.Completing {
		j.State = append(j.State, string(jobstate.Completing))
	}
	switch {
	case v.State == jobstate.Failed:
		if _, refused := storeRefused(pg); refused {
			j.Reason = reasonStoreRefused
		}
	}
	j.StartTime, j.EndTime, j.ExitCode = v.Start, v.End, int(v.ExitCode)
	nodes := pg.Status.Nodes // in member order, as the job's nodes are numbered
	if len(nodes) == 0 {
		nodes = v.Nodes
	}
	j.NodeNames, j.NodeList = nodes, slurmapi.HostList(nodes)
	j.TRESAlloc = ""
	if len(nodes) > 0 {
		j.TRESAlloc = j.TRESReq
	}
}
