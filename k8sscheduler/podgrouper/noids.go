package podgrouper

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobIDsUsedUp reports whether err says the job id counter has no id left
// for a Kubernetes workload (slurmapi/kube.IDsUsedUpError, found through
// its method: this package may not import the Slurm API). Ids are never
// reused, so retrying will not help until an administrator acts.
func jobIDsUsedUp(err error) bool {
	var used interface{ JobIDsUsedUp() bool }
	return errors.As(err, &used) && used.JobIDsUsedUp()
}

// warnNoJobID writes a Warning Event on pod saying why it waits without a
// group, so `kubectl describe pod` shows it instead of a silent stall. The
// queue's backoff bounds how often it is written.
func (g *Controller) warnNoJobID(ctx context.Context, pod *corev1.Pod, cause error) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: "JobIDsUsedUp",
		Message: fmt.Sprintf("sluice cannot give this workload a job id, so it is not scheduled: %v; "+
			"job ids are never reused, see docs/rest-compatibility.md (Job ids)", cause),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "sluice-podgrouper"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := g.kube.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		g.log.Error(err, "event on a pod without a job id", "pod", pod.Namespace+"/"+pod.Name)
	}
}
