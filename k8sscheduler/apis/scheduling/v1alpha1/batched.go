package v1alpha1

// A submit batch is a ConfigMap in the Sluice server's namespace, labelled
// SubmitBatchLabel, holding Slurm jobs that were acknowledged together (the REST API's
// group commit, slurmapi/kube): one data key per job id, its value the job's PodGroup as
// JSON (jobstate.EncodeBatched writes it, jobstate.BatchedPodGroup reads it). A pending
// job stays there until it starts or is changed, when its PodGroup is created; the
// scheduler, squeue and the submit queue read it from the batch until then.
// Why such a job waits is on the batch too, in PendingReasonsAnnotation (batchedwaits.go).
const SubmitBatchLabel = "sluice.dev/submit-batch"
