package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// JobLogs reads a job's output from its pods' logs (slurmapi.LogSource):
// a Slurm job's script writes to its container's stdout and stderr, which
// the kubelet keeps, so output is readable whether or not the partition
// mounts a shared volume for --output.
type JobLogs struct {
	c    client.Client
	pods kubernetes.Interface
}

// NewJobLogs connects to the cluster of cfg.
func NewJobLogs(cfg *rest.Config) (*JobLogs, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes clientset: %w", err)
	}
	return &JobLogs{c: c, pods: cs}, nil
}

// JobLog streams the log of the job's task on node opts.Node from its
// latest run. A job with no pod there yet answers 409.
func (l *JobLogs) JobLog(ctx context.Context, job *slurmapi.Job, opts slurmapi.LogOptions) (io.ReadCloser, error) {
	pod, err := l.taskPod(ctx, job, opts.Node)
	if err != nil {
		return nil, err
	}
	container := pod.Spec.Containers[0].Name
	for _, c := range pod.Spec.Containers {
		if c.Name == containerName {
			container = c.Name
		}
	}
	po := &corev1.PodLogOptions{Container: container, Follow: opts.Follow}
	switch opts.Stream {
	case slurmapi.LogStdout:
		s := corev1.LogStreamStdout
		po.Stream = &s
	case slurmapi.LogStderr:
		s := corev1.LogStreamStderr
		po.Stream = &s
	}
	body, err := l.pods.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, po).Stream(ctx)
	switch {
	case err == nil:
		return body, nil
	case apierrors.IsInvalid(err) && po.Stream != nil:
		return nil, slurmapi.Errorf(http.StatusNotImplemented, slurmapi.ErrNotSupported, "stream",
			"this cluster's API server keeps a pod's stdout and stderr in one log (feature gate PodLogsQuerySplitStreams is off): "+
				"read both streams without --error, or have the partition mount a shared volume for --error files (%s)", apiMessage(err))
	case apierrors.IsBadRequest(err):
		// The container has not started (or the API server refuses the
		// stream option): the kubelet has nothing to give yet.
		return nil, slurmapi.Errorf(http.StatusConflict, slurmapi.ErrRestEmptyResult, "job_id",
			"job %d's output is not readable yet (pod %s/%s): %v", job.ID, pod.Namespace, pod.Name, apiMessage(err))
	}
	return nil, slurmapi.Errorf(http.StatusBadGateway, slurmapi.ErrRestEmptyResult, "job_id",
		"reading job %d's output from pod %s/%s on node %s failed: %v", job.ID, pod.Namespace, pod.Name, pod.Spec.NodeName, apiMessage(err))
}

// apiMessage is the API server's own words for err.
func apiMessage(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

// taskPod finds the pod running the job's task on node index. A Slurm
// job's pods are named after its PodGroup, its run (requeues) and the node
// index, so the latest run's pod is read by name. A manifest workload's
// pods are the ones naming its PodGroup in their sluice.dev/pod-group
// annotation, taken in name order.
func (l *JobLogs) taskPod(ctx context.Context, job *slurmapi.Job, index int) (*corev1.Pod, error) {
	if job.Manifest {
		pods, err := l.manifestPods(ctx, job)
		if err != nil {
			return nil, err
		}
		if index >= len(pods) {
			return nil, noTask(job, index, len(pods))
		}
		return &pods[index], nil
	}
	var pg v1alpha1.PodGroup
	if err := l.c.Get(ctx, client.ObjectKey{Namespace: Namespace(job.Desc.Account), Name: PodGroupName(job.ID)}, &pg); err != nil {
		return nil, fmt.Errorf("read the PodGroup of job %d: %w", job.ID, err)
	}
	var pod corev1.Pod
	err := l.c.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: PodName(&pg, index)}, &pod)
	if apierrors.IsNotFound(err) {
		return nil, noTask(job, index, int(pg.Spec.MinMember))
	}
	if err != nil {
		return nil, fmt.Errorf("read the pod of job %d on node %d: %w", job.ID, index, err)
	}
	return &pod, nil
}

// noTask says why there is no pod for node index of a job on nodes nodes.
func noTask(job *slurmapi.Job, index, nodes int) *slurmapi.Error {
	if index > 0 && index >= nodes {
		return slurmapi.BadRequest(slurmapi.ErrRestInvalidQuery, "node",
			"job %d has no task on node %d: it runs on %d node(s), numbered from 0", job.ID, index, nodes)
	}
	return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrRestEmptyResult, "job_id",
		"job %d has no output yet: its task on node %d has not started (job state %s)", job.ID, index, strings.Join(job.State, ","))
}

// manifestPods are a manifest workload's pods, in name order, as the job model finds
// job id's pods (a bare pod's job included).
func (l *JobLogs) manifestPods(ctx context.Context, job *slurmapi.Job) ([]corev1.Pod, error) {
	found, ok, err := jobstate.Find(ctx, l.c, job.ID)
	if err != nil || !ok {
		return nil, err
	}
	out := make([]corev1.Pod, 0, len(found.Pods))
	for _, p := range found.Pods {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
