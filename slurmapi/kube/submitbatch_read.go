package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Jobs acknowledged in a batch but not yet created as PodGroups read as
// PodGroups that were never stored: decoded from the batch, with no
// resourceVersion, the submit time as their creationTimestamp, and as
// status (PENDING, as a fresh PodGroup) only the Scheduled condition the
// scheduler would have written, from the batch's pending reasons
// (v1alpha1.PendingReasonsAnnotation), so jobstate.PendingReason reads why
// the job waits as it would from a stored PodGroup.

// listBatches lists the batch ConfigMaps in namespace.
func listBatches(ctx context.Context, r client.Reader, namespace string) ([]corev1.ConfigMap, error) {
	var list corev1.ConfigMapList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.HasLabels{SubmitBatchLabel}); err != nil {
		return nil, fmt.Errorf("list submitted job batches: %w", err)
	}
	return list.Items, nil
}

// batchedGroups are the jobs (only id, unless 0) still in batches; none
// without a SubmitWindow, so a server that does not batch needs no right
// to list ConfigMaps. An entry that does not decode is left out here; the
// SubmitQueue reports it.
func (b *Backend) batchedGroups(ctx context.Context, id uint32) ([]v1alpha1.PodGroup, error) {
	if b.batch == nil {
		return nil, nil
	}
	batches, err := listBatches(ctx, b.c, b.opts.Namespace)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.PodGroup
	for i := range batches {
		out = append(out, batchedJobs(ctx, &batches[i], id)...)
	}
	return out, nil
}

// batchedJobs decodes the jobs of batch cm (only id, unless 0), each with
// why it waits as the batch says.
func batchedJobs(ctx context.Context, cm *corev1.ConfigMap, id uint32) []v1alpha1.PodGroup {
	var (
		out   []v1alpha1.PodGroup
		waits map[string]v1alpha1.BatchedWait
		read  bool
	)
	for key := range cm.Data {
		if id != 0 && key != v1alpha1.FormatJobID(id) {
			continue
		}
		pg, err := jobstate.BatchedPodGroup(cm, key)
		if err != nil {
			continue
		}
		pg.CreationTimestamp = metav1.NewTime(pg.SubmitTime())
		if !read {
			waits, read = pendingReasons(ctx, cm), true
		}
		if w, ok := waits[key]; ok {
			pg.Status.Conditions = []metav1.Condition{w.Condition()}
		}
		out = append(out, *pg)
	}
	return out
}

// pendingReasons reads why batch cm's jobs wait; a value that does not
// parse (not the scheduler's) says nothing, and its jobs read None.
func pendingReasons(ctx context.Context, cm *corev1.ConfigMap) map[string]v1alpha1.BatchedWait {
	waits, err := v1alpha1.ParsePendingReasons(cm.Annotations[v1alpha1.PendingReasonsAnnotation])
	if err != nil {
		klog.FromContext(ctx).Info("a submit batch's pending reasons do not parse; its jobs read None", "batch", cm.Namespace+"/"+cm.Name, "err", err)
		return nil
	}
	return waits
}

// withBatched adds to the stored PodGroups the batched jobs not stored
// yet. batched was listed before stored: a batch is removed only after all
// its jobs exist, so no job falls between the two lists.
func withBatched(stored, batched []v1alpha1.PodGroup) []v1alpha1.PodGroup {
	if len(batched) == 0 {
		return stored
	}
	have := make(map[string]bool, len(stored))
	for i := range stored {
		have[stored[i].Labels[v1alpha1.JobIDLabel]] = true
	}
	for _, pg := range batched {
		// Two batches hold one job when a retry with its Idempotency-Key
		// stored it again while the first attempt's batch was in flight.
		if id := pg.Labels[v1alpha1.JobIDLabel]; !have[id] {
			have[id] = true
			stored = append(stored, pg)
		}
	}
	return stored
}

// materialize creates the PodGroup of a batched job now, so a change
// (scancel, hold, update) acts on a stored object; the SubmitQueue later
// finds it there. The batched jobs its --dependency names are created
// first, as the SubmitQueue would, so the lifecycle never judges the
// dependency while a job it names is still in a batch.
func (b *Backend) materialize(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	if s := pg.Spec.Slurm; s != nil && s.Dependency != "" {
		if err := b.materializeDependencies(ctx, s.Dependency); err != nil {
			return nil, err
		}
	}
	return b.createBatched(ctx, pg)
}

// materializeDependencies creates the PodGroups of the batched jobs that
// dependency names (only those: their own dependencies do not decide
// whether this job may start).
func (b *Backend) materializeDependencies(ctx context.Context, dependency string) error {
	deps, err := sbatch.ParseDependency(dependency)
	if err != nil {
		return nil // judged, and refused, by the lifecycle as before
	}
	for _, d := range deps.List {
		for _, id := range d.Jobs {
			batched, err := b.batchedGroups(ctx, id)
			if err != nil {
				return err
			}
			for i := range batched {
				if _, err := b.createBatched(ctx, &batched[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// createBatched stores a batched job's PodGroup; one already there is read.
func (b *Backend) createBatched(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	pg = pg.DeepCopy()
	pg.CreationTimestamp = metav1.Time{}
	pg.Status = v1alpha1.PodGroupStatus{} // the batch's reasons: the scheduler writes the stored group's
	err := b.c.Create(ctx, pg)
	if apierrors.IsAlreadyExists(err) {
		err = b.c.Get(ctx, client.ObjectKeyFromObject(pg), pg)
	}
	if err != nil {
		return nil, fmt.Errorf("create the PodGroup of batched job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	return pg, nil
}
