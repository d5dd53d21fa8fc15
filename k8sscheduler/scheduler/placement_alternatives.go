package scheduler

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// readAlternatives reads a Slurm job's ways to run from its PodGroup: the partitions it
// lists (-p a,b) and the choices of a matching or (--constraint [a|b]), each a required
// node affinity all its nodes satisfy. The core tries them in order (bridge.Alternative).
func (g *groupEntry) readAlternatives(pg *v1alpha1.PodGroup) bool {
	if parts := v1alpha1.ParsePartitions(pg.Annotations[v1alpha1.PartitionsAnnotation]); len(parts) > 0 {
		g.altParts = parts
	}
	raw := pg.Annotations[v1alpha1.NodeAffinityChoicesAnnotation]
	if raw == "" {
		return true
	}
	choices, err := v1alpha1.ParseNodeAffinityChoices(raw)
	if err != nil {
		return g.block(bridge.ReasonBadConstraints, "%v", err)
	}
	text := pg.Annotations[v1alpha1.NodeConstraintAnnotation]
	for i := range choices {
		cons := newConstraints(nil, &choices[i], nil)
		if text != "" {
			c := *cons
			c.text = fmt.Sprintf("%s, choice %d of %d: %s", text, i+1, len(choices), cons.text)
			cons = &c
		}
		g.altCons = append(g.altCons, cons)
	}
	return true
}

// addAlternatives gives the core a job's alternatives: each partition it lists, in order,
// with each choice of its matching or, in order (partition first). A choice every node
// satisfies names no node set.
func (c *cache) addAlternatives(j *bridge.Job, g *groupEntry) {
	parts := g.altParts
	if len(parts) == 0 {
		parts = []string{j.Partition}
	}
	cons := g.altCons
	if len(cons) == 0 {
		cons = []*nodeConstraints{nil}
	}
	j.Alternatives = make([]bridge.Alternative, 0, len(parts)*len(cons))
	for _, p := range parts {
		for _, cn := range cons {
			alt := bridge.Alternative{Partition: p}
			if cn != nil && !c.classFor(cn).all {
				alt.NodeSet = cn.key
			}
			j.Alternatives = append(j.Alternatives, alt)
		}
	}
}

// setRunPartition records, as a job of several partitions starts, the partition its
// nodes are in as its spec.partition (and label): the partition it runs in, which its
// pods, its accounting and squeue then show. One write, only for such a job; a failed
// write fails the start, which the next cycle tries again.
func (s *Scheduler) setRunPartition(ctx context.Context, pg *v1alpha1.PodGroup, binds []bridge.Bind) (*v1alpha1.PodGroup, error) {
	if pg.Annotations[v1alpha1.PartitionsAnnotation] == "" || len(binds) == 0 {
		return pg, nil
	}
	s.cache.mu.Lock()
	part := ""
	if n := s.cache.nodes[binds[0].Node]; n != nil {
		part = n.built.Partition
	}
	s.cache.mu.Unlock()
	if part == "" || part == pg.Spec.Partition {
		return pg, nil
	}
	out := pg.DeepCopy()
	// The cached copy may be older than the object (its status changes often): on a
	// conflict the object is read again and the change made on it.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		out.Spec.Partition = part
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[v1alpha1.PartitionLabel] = part
		err := s.crs.Update(ctx, out)
		if apierrors.IsConflict(err) {
			if gerr := s.crs.Get(ctx, client.ObjectKeyFromObject(pg), out); gerr != nil {
				return gerr
			}
		}
		return err
	})
	if err != nil {
		return pg, fmt.Errorf("recording partition %s of job %s: %w", part, pg.Labels[v1alpha1.JobIDLabel], err)
	}
	return out, nil
}
