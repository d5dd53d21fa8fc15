package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SlurmJob is what an sbatch submission asked for, beyond the gang shape
// (PodGroupSpec.Members), the account (Queue), Partition and QOS that the
// scheduler reads directly. The job id is the PodGroup's sluice.dev/job-id
// label, which manifest workloads carry too.
type SlurmJob struct {
	// Name is the job name (--job-name).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`
	// User submitted the job; it runs and is accounted as this user.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	User string `json:"user"`
	// Script is the batch script, run by the first task.
	// +optional
	Script string `json:"script,omitempty"`
	// Argv are the script's arguments.
	// +optional
	Argv []string `json:"argv,omitempty"`
	// Environment is the part of the submitted environment Sluice itself
	// reads (the simulation knobs, SLURM_PRIO_PROCESS); it is exported to
	// every task. Everything else the submission exported is in
	// SealedEnvironment.
	// +optional
	Environment map[string]string `json:"environment,omitempty"`
	// SealedEnvironment is the rest of the submitted environment, sealed by
	// the server (AES-256-GCM under a key derived from its token key, bound
	// to the namespace and the user), base64: readers of the PodGroup see
	// none of it. The pod factory opens it into a Secret only the job's
	// pods mount.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	SealedEnvironment string `json:"sealedEnvironment,omitempty"`
	// TimeLimit is the wall time after which the job is ended (TimedOut);
	// unset means the partition's default time.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	TimeLimit *metav1.Duration `json:"timeLimit,omitempty"`
	// Nodes is the node count (--nodes); each node is one pod, so it equals
	// the PodGroup's MinMember.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Nodes int32 `json:"nodes,omitempty"`
	// Tasks is the total task count (--ntasks).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Tasks int32 `json:"tasks,omitempty"`
	// TasksPerNode (--ntasks-per-node); unset means tasks spread evenly.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TasksPerNode *int32 `json:"tasksPerNode,omitempty"`
	// CPUsPerTask (--cpus-per-task).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	CPUsPerTask int32 `json:"cpusPerTask,omitempty"`
	// MemoryPerNode (--mem).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="memoryPerNode must not be negative"
	MemoryPerNode *resource.Quantity `json:"memoryPerNode,omitempty"`
	// GPUsPerNode (--gres=gpu:N, --gpus-per-node); fractions ("0.5") ask
	// for a shared GPU.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="gpusPerNode must not be negative"
	GPUsPerNode *resource.Quantity `json:"gpusPerNode,omitempty"`
	// Array is the --array spec of an array job, e.g. "0-15%4" or "1,3,5".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[0-9]+(-[0-9]+(:[0-9]+)?)?(,[0-9]+(-[0-9]+(:[0-9]+)?)?)*(%[0-9]+)?$`
	Array string `json:"array,omitempty"`
	// ArrayJobID and ArrayTaskID are set on each task of an array job.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ArrayJobID *int64 `json:"arrayJobID,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	ArrayTaskID *int32 `json:"arrayTaskID,omitempty"`
	// Dependency is the --dependency spec, e.g. "afterok:12:13,afterany:9".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(after|afterany|afterok|afternotok|aftercorr|singleton)(:[0-9_+]+)*([,?](after|afterany|afterok|afternotok|aftercorr|singleton)(:[0-9_+]+)*)*$`
	Dependency string `json:"dependency,omitempty"`
	// Requeue lets the job be requeued after preemption or node failure.
	// +optional
	Requeue bool `json:"requeue,omitempty"`
	// Hold keeps the job pending until released (scontrol release).
	// +optional
	Hold bool `json:"hold,omitempty"`
	// StandardOutput, StandardError and StandardInput are paths with
	// Slurm's filename patterns (%j, %x, %A, %a ...).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	StandardOutput string `json:"standardOutput,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	StandardError string `json:"standardError,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	StandardInput string `json:"standardInput,omitempty"`
	// WorkingDirectory is where the script runs.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	WorkingDirectory string `json:"workingDirectory,omitempty"`
	// Image is the container image; unset means the partition's default.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// Comment is free text (--comment).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Comment string `json:"comment,omitempty"`
}
