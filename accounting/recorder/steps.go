package recorder

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// stepsOf reads the step report a Slurm job's batch host (node 0 of its
// current run) left as its container's termination message when the
// batch script ended (slurmapi/launch): the kubelet copied it into the
// pod's status, so the pod needs no credential to report its steps. It
// is the job's own report about its own steps, trusted as far as that.
func stepsOf(jobID int64, pg *v1alpha1.PodGroup, pods []*corev1.Pod) (msg string, steps []accounting.Step, err error) {
	if pg == nil || pg.Spec.Slurm == nil {
		return "", nil, nil
	}
	// The batch host is known by its name and by the labels only Sluice may
	// write (the webhook and the sluice-owned-metadata policy keep tenants
	// off them): a tenant's pod that joins the group under the batch host's
	// name, after the real one went, is not read.
	batch := jobstate.PodName(pg, 0)
	for _, p := range pods {
		index, err := v1alpha1.ParseNodeIndex(p.Labels[v1alpha1.NodeIndexLabel])
		if p.Name != batch || err != nil || index != 0 || int64(v1alpha1.JobIDOf(p.Labels)) != jobID {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; c.Name == jobstate.JobContainer && t != nil && t.Message != "" {
				steps, err := accounting.DecodeSteps(jobID, t.Message)
				return t.Message, steps, err
			}
		}
	}
	return "", nil, nil
}

// stepLog remembers which step report was written for each job, so a
// report is written once, not at every change of the job.
type stepLog struct {
	mu      sync.Mutex
	written map[int64]string
}

// record writes the steps of the flushed groups whose report is new.
func (l *stepLog) record(ctx context.Context, store accounting.Store, work []groupWork) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written == nil {
		l.written = map[int64]string{}
	}
	var all []accounting.Step
	fresh := map[int64]string{}
	for _, w := range work {
		msg, steps, err := stepsOf(w.id, w.pg, w.pods)
		if err != nil {
			klog.FromContext(ctx).Error(err, "a job's step report cannot be read", "podGroup", w.key)
			continue
		}
		if len(steps) == 0 || l.written[w.id] == msg {
			continue
		}
		all = append(all, steps...)
		fresh[w.id] = msg
	}
	if len(all) == 0 {
		return nil
	}
	if err := store.RecordSteps(ctx, all); err != nil {
		return fmt.Errorf("record %d job steps: %w", len(all), err)
	}
	for id, msg := range fresh {
		l.written[id] = msg
	}
	return nil
}
