package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// Launchers opens attaches on Slurm jobs' batch hosts and signals their
// steps (slurmapi.AttachSource, slurmapi.StepSignaler): the launcher of node 0, at its pod's IP on the
// launcher port, with the job's key derived from the seed the pod
// factory uses.
type Launchers struct {
	c    client.Client
	seed []byte
	// Addr is where a pod's launcher listens; default its IP and
	// launch.Port. Tests that run pods as local processes replace it.
	Addr func(*corev1.Pod) string
	// Simulated reports whether a pod's node runs no containers (kwok),
	// so its launcher will never answer; default: the node's kwok
	// annotation. Those tests replace it too.
	Simulated func(context.Context, *corev1.Pod) (bool, error)
}

// NewLaunchers connects to the cluster of cfg; seed is the pod factory's
// LaunchKeySeed.
func NewLaunchers(cfg *rest.Config, seed []byte) (*Launchers, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	l := &Launchers{c: c, seed: seed, Addr: podLauncherAddr}
	l.Simulated = l.onSimulatedNode
	return l, nil
}

func podLauncherAddr(p *corev1.Pod) string {
	return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(launch.Port))
}

// Attach checks request, finds job's batch host and dials its launcher.
func (l *Launchers) Attach(ctx context.Context, job *slurmapi.Job, request string) (*websocket.Conn, error) {
	_, raw, err := launch.DecodeAttach(request)
	if err != nil {
		return nil, slurmapi.BadRequest(slurmapi.ErrRestInvalidQuery, "attach", "%v", err)
	}
	addr, key, err := l.batchHost(ctx, job)
	if err != nil {
		return nil, err
	}
	ws, err := launch.DialLauncher(ctx, addr, key, raw)
	if err != nil {
		return nil, launcherUnreachable(job, err)
	}
	return ws, nil
}

func launcherUnreachable(job *slurmapi.Job, err error) *slurmapi.Error {
	return slurmapi.Errorf(http.StatusBadGateway, slurmapi.ErrNotSupported, "job_id",
		"job %d's launcher cannot be reached: %v (the site's network policy must let the Sluice server reach port %d of job pods)",
		job.ID, err, launch.Port)
}

// SignalStep signals step of job on its batch host (scancel JOB.STEP).
func (l *Launchers) SignalStep(ctx context.Context, job *slurmapi.Job, step, sig int) error {
	addr, key, err := l.batchHost(ctx, job)
	if err != nil {
		return err
	}
	err = launch.SignalStep(ctx, addr, key, step, sig)
	var refused *launch.StepSignalError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused) && refused.Status == http.StatusNotFound:
		return slurmapi.Errorf(http.StatusNotFound, slurmapi.ErrInvalidJobID, "job_id", "step %d.%d is not running on the job's batch host", job.ID, step)
	case errors.As(err, &refused):
		return fmt.Errorf("job %d's launcher refused to signal step %d: %w", job.ID, step, err)
	}
	return launcherUnreachable(job, err)
}

// RunningSteps reads a running job's steps from its batch host
// (slurmapi.LiveSteps): a job with no launcher to ask (a one-node batch
// job) or one that cannot be reached has none to add.
func (l *Launchers) RunningSteps(ctx context.Context, job *slurmapi.Job) ([]accounting.Step, error) {
	addr, key, err := l.batchHost(ctx, job)
	if err != nil {
		return nil, err
	}
	return launch.RunningSteps(ctx, addr, key, int64(job.ID))
}

// batchHost is the launcher address and key of job's batch host, or why
// the job has none to reach.
func (l *Launchers) batchHost(ctx context.Context, job *slurmapi.Job) (string, []byte, error) {
	if job.Manifest {
		return "", nil, notAttachable(job, "it was not submitted through the Slurm API")
	}
	var pg v1alpha1.PodGroup
	if err := l.c.Get(ctx, client.ObjectKey{Namespace: Namespace(job.Desc.Account), Name: PodGroupName(job.ID)}, &pg); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil, notAttachable(job, "it has ended")
		}
		return "", nil, fmt.Errorf("read the PodGroup of job %d: %w", job.ID, err)
	}
	var pod corev1.Pod
	err := l.c.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: PodName(&pg, 0)}, &pod)
	if apierrors.IsNotFound(err) {
		return "", nil, notYetAttachable(job, "its batch host's pod "+PodName(&pg, 0)+" does not exist yet (job state "+strings.Join(job.State, ",")+")")
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the batch host of job %d: %w", job.ID, err)
	}
	if !ServesLaunches(&pg, int(pg.Spec.MinMember)) {
		return "", nil, notAttachable(job, "a one-node batch job runs no launcher to attach to; `srun` inside its script starts steps")
	}
	if simulated, err := l.Simulated(ctx, &pod); err != nil {
		return "", nil, err
	} else if simulated {
		return "", nil, notAttachable(job, fmt.Sprintf("its batch host %s is a simulated node (kwok), which runs no containers, so no launcher "+
			"will ever answer there; steps, srun --pty and salloc's srun need real nodes (on the rig: sluice dev --real-nodes N)", pod.Spec.NodeName))
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
	case corev1.PodPending:
		return "", nil, notYetAttachable(job, fmt.Sprintf("its batch host's pod %s is Pending on %s (%s)", pod.Name, pod.Spec.NodeName, podWaiting(&pod)))
	default:
		return "", nil, notAttachable(job, fmt.Sprintf("its batch host's pod %s is %s", pod.Name, pod.Status.Phase))
	}
	key := LaunchKey(l.seed, &pg)
	if fp := podKeySHA256(&pod); fp != "" && fp != launchKeySHA256(key) {
		return "", nil, notAttachable(job, "its pods started under an earlier token key of the Sluice server (the key was rotated since), "+
			"so the server can no longer sign for them; the job runs on, and its next run (a requeue) gets a key under the new one")
	}
	return l.Addr(&pod), []byte(key), nil
}

// podKeySHA256 is the launch key fingerprint pod was started with.
func podKeySHA256(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == launch.EnvKeySHA256 {
				return e.Value
			}
		}
	}
	return ""
}

func notAttachable(job *slurmapi.Job, why string) *slurmapi.Error {
	return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrNotSupported, "job_id", "job %d has no launcher to reach (for srun --pty, salloc steps or a step signal): %s", job.ID, why)
}

// attachRetry is the Retry-After of an attach that may succeed soon.
const attachRetry = time.Second

// notYetAttachable answers an attach whose launcher is on its way (503 with
// Retry-After: srun waits, saying what for, as Slurm's srun says "step
// creation temporarily disabled, retrying").
func notYetAttachable(job *slurmapi.Job, why string) *slurmapi.Error {
	e := slurmapi.Errorf(http.StatusServiceUnavailable, slurmapi.ErrNodesBusy, "job_id", "job %d's launcher is not up yet: %s", job.ID, why)
	e.RetryAfter = attachRetry
	return e
}

// simulatedNodeAnnotation marks a node kwok manages: it reports pods
// Running without starting a container.
const simulatedNodeAnnotation = "kwok.x-k8s.io/node"

// onSimulatedNode reports whether pod's node is simulated, so no launcher
// will ever listen in it.
func (l *Launchers) onSimulatedNode(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if pod.Spec.NodeName == "" {
		return false, nil
	}
	var node corev1.Node
	if err := l.c.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read node %s: %w", pod.Spec.NodeName, err)
	}
	_, ok := node.Annotations[simulatedNodeAnnotation]
	return ok, nil
}

// podWaiting says what a pending pod waits for: its first waiting
// container's reason (ContainerCreating, ImagePullBackOff), else its phase's
// condition.
func podWaiting(pod *corev1.Pod) string {
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			if w.Message != "" {
				return cs.Name + ": " + w.Reason + ": " + w.Message
			}
			return cs.Name + ": " + w.Reason
		}
	}
	return "not started"
}
