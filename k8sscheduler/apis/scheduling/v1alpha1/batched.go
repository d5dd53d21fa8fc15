package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// A submit batch is a ConfigMap in the Sluice server's namespace, labelled
// SubmitBatchLabel, holding Slurm jobs that were acknowledged together (the REST API's
// group commit, slurmapi/kube): one data key per job id, its value the job's PodGroup as
// JSON. A pending job stays there until it starts or is changed, when its PodGroup is
// created; the scheduler, squeue and the submit queue read it from the batch until then.
// Why such a job waits is on the batch too, in PendingReasonsAnnotation (batchedwaits.go).
const SubmitBatchLabel = "sluice.dev/submit-batch"

// BatchedPodGroup decodes the job stored under key (its job id) in batch cm: a PodGroup
// never stored, so with no resourceVersion, UID or status.
func BatchedPodGroup(cm *corev1.ConfigMap, key string) (*PodGroup, error) {
	var pg PodGroup
	if err := json.Unmarshal([]byte(cm.Data[key]), &pg); err != nil {
		return nil, fmt.Errorf("batch %s job %s: %w", cm.Name, key, err)
	}
	if pg.Labels[JobIDLabel] != key {
		return nil, fmt.Errorf("batch %s holds under key %s the job %q", cm.Name, key, pg.Labels[JobIDLabel])
	}
	pg.ResourceVersion, pg.UID = "", ""
	return &pg, nil
}

// Stored reports whether pg is an object the API server holds. A job read from its
// submit batch (BatchedPodGroup) and the group a bare pod implies (ImpliedPodGroup)
// are not: they have no resourceVersion, and a write to them must create them first.
func (pg *PodGroup) Stored() bool { return pg.ResourceVersion != "" }

// Batched reports whether pg is a Slurm job read from its submit batch, not stored yet.
func (pg *PodGroup) Batched() bool { return !pg.Stored() && pg.Spec.Slurm != nil }
