package reservations

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// Bounds on waiting for the rig, never what the test asserts.
const (
	waitLong = 2 * time.Minute
	// lead is how far ahead the window opens: time for the vision jobs to be created and
	// the short one to run to its time limit before it. span is the window's length.
	lead, span = 30 * time.Second, 30 * time.Second
)

// TestJobsAroundAReservation is issue 39's "done when" for a Kubernetes Job, on a real
// `sluice server` with its webhook: an 8-GPU reservation of the one node for queue nlp,
// opening a little ahead. A vision Job whose activeDeadlineSeconds runs past the window's
// start does not start on the node; one whose limit ends before it does; nlp's Job,
// naming the reservation, starts only inside the window; the long vision Job gets the
// node only once the window has closed. Each pod's bind time (its PodScheduled
// condition, which the API server stamps on the binding, in whole seconds) is compared
// with the window's edges, which are whole seconds too; nothing is timed.
//
// On the way, admission refuses what scontrol would: a second reservation meeting the
// window on the node, one naming a node that does not exist, and a vision PodGroup
// naming nlp's reservation.
func TestJobsAroundAReservation(t *testing.T) {
	rig := e2e.Rig(t)
	crs := sluiceproc.InstallSite(t, rig.RESTConfig())
	dir := t.TempDir()
	keyFile, _ := sluiceproc.KeyAndToken(t, dir, "alice")
	sluiceproc.Start(t, "sluice server", map[string]any{
		"kubeconfig": rig.Kubeconfig, "stateDir": filepath.Join(dir, "state"), "listen": "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false},
		"webhook":        map[string]any{"enabled": true, "addr": "127.0.0.1:0", "clientCAFile": rig.WebhookClientCA},
		"rest":           map[string]any{"jwtKeyFile": keyFile},
	})
	kube := rig.Client()
	nlp, vision := e2e.TeamNamespace(t, rig, "nlp"), e2e.TeamNamespace(t, rig, "vision")
	// The server registers its webhooks as it starts; the API server calls them a moment later.
	e2e.WaitFor(t, "the webhook in effect", waitLong, func(ctx context.Context) (bool, error) {
		p := job("probe", "vision", time.Second, nil).Spec.Template
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Annotations: p.Annotations}, Spec: p.Spec}
		got, err := kube.CoreV1().Pods(vision).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Labels[v1alpha1.QueueLabel] != "", fmt.Errorf("a dry-run pod came back without a queue label")
	})

	node := cluster.NodeName(pool.Name, 0)
	start := time.Now().Add(lead).Truncate(time.Second)
	end := start.Add(span)
	resv := &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "class-" + nlp},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(start), EndTime: &metav1.Time{Time: end},
			Nodes: []string{node}, Accounts: []string{"nlp"}}}
	create(t, crs, resv)
	refused(t, crs, &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "overlap-" + nlp},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(end.Add(-time.Second)), Duration: &metav1.Duration{Duration: time.Hour},
			Nodes: []string{node}, Namespaces: []string{vision}}},
		"Reservation request overlaps with another reservation", "reservation "+resv.Name+" holds node "+node)
	refused(t, crs, &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "ghost-" + nlp},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(end.Add(time.Hour)), Duration: &metav1.Duration{Duration: time.Hour},
			Nodes: []string{"ghost"}, Namespaces: []string{vision}}},
		"Invalid node name specified", "ghost")
	// The rig's admin is the server's own identity, whose PodGroups are the Slurm API's
	// and the grouper's: another admin writes this one.
	other := rest.CopyConfig(rig.RESTConfig())
	other.Impersonate = rest.ImpersonationConfig{UserName: "other-admin", Groups: []string{"system:masters", "system:authenticated"}}
	otherCRs, err := client.New(other, client.Options{Scheme: crs.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	refused(t, otherCRs, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: vision, Name: "sneaky",
		Labels: map[string]string{v1alpha1.ReservationAnnotation: resv.Name}},
		Spec: v1alpha1.PodGroupSpec{Queue: "vision", MinMember: 1}},
		"reservation "+resv.Name+" does not admit namespace "+vision)
	// The server's cache has the reservation once its controller has resolved its nodes.
	e2e.WaitFor(t, "reservation "+resv.Name+" resolved", waitLong, func(ctx context.Context) (bool, error) {
		err := crs.Get(ctx, client.ObjectKeyFromObject(resv), resv)
		return err == nil && len(resv.Status.Nodes) == 1, err
	})

	long := createJob(t, kube, vision, job("long", "vision", 5*time.Second, ptr.To(int64(3600))))
	short := createJob(t, kube, vision, job("short", "vision", 2*time.Second, ptr.To(int64(lead/time.Second/3))))
	inResv := job("nlp", "nlp", 4*time.Second, nil)
	inResv.Spec.Template.Labels[v1alpha1.ReservationAnnotation] = resv.Name
	nlpJob := createJob(t, kube, nlp, inResv)

	for _, c := range []struct {
		what         string
		ns, job      string
		within       time.Duration
		after, until time.Time // bound in [after, until); zero: unbounded
	}{
		{"the short vision job, before the window", vision, short, waitLong, time.Time{}, start},
		{"nlp's job, inside the window", nlp, nlpJob, waitLong + lead, start, end},
		{"the long vision job, after the window", vision, long, waitLong + lead + span, end, time.Time{}},
	} {
		p, bound := waitBound(t, kube, c.ns, c.job, c.within)
		if p.Spec.NodeName != node {
			t.Errorf("%s: on node %q, want %s", c.what, p.Spec.NodeName, node)
		}
		if (!c.after.IsZero() && bound.Before(c.after)) || (!c.until.IsZero() && !bound.Before(c.until)) {
			t.Errorf("%s: bound at %s; window %s to %s", c.what, stamp(bound), stamp(start), stamp(end))
		}
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// job is a one-pod Job of queue asking for the node's 8 GPUs, which kwok runs for d,
// with activeDeadlineSeconds deadline (nil: none).
func job(name, queue string, d time.Duration, deadline *int64) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.QueueLabel: queue}, Annotations: cluster.SimulatedRun(d, 0)},
				Spec: corev1.PodSpec{
					SchedulerName:         v1alpha1.DefaultSchedulerName,
					RestartPolicy:         corev1.RestartPolicyNever,
					ActiveDeadlineSeconds: deadline,
					Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:latest",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("8")}}}},
				},
			},
		},
	}
}

// createJob creates j in ns, deleted with its pods when the test ends, and returns its name.
func createJob(t *testing.T, kube kubernetes.Interface, ns string, j *batchv1.Job) string {
	t.Helper()
	if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Job %s/%s: %v", ns, j.Name, err)
	}
	t.Cleanup(func() {
		_ = kube.BatchV1().Jobs(ns).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
	return j.Name
}

// waitBound waits for the pod of Job name to be bound and returns it with the time it was
// bound: its PodScheduled condition's, which the API server sets on the binding.
func waitBound(t *testing.T, kube kubernetes.Interface, ns, name string, within time.Duration) (*corev1.Pod, time.Time) {
	t.Helper()
	var pod *corev1.Pod
	e2e.WaitFor(t, "Job "+ns+"/"+name+"'s pod bound", within, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName != "" {
				pod = &pods.Items[i]
				return true, nil
			}
		}
		return false, fmt.Errorf("%d pod(s), none bound", len(pods.Items))
	})
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return pod, c.LastTransitionTime.Time
		}
	}
	t.Fatalf("pod %s/%s is bound to %s without a PodScheduled condition: %+v", ns, pod.Name, pod.Spec.NodeName, pod.Status.Conditions)
	return nil, time.Time{}
}

func create(t *testing.T, crs client.Client, obj client.Object) {
	t.Helper()
	if err := crs.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = crs.Delete(context.Background(), obj) })
}

// refused creates obj and wants admission's 4xx refusal saying each of want.
func refused(t *testing.T, crs client.Client, obj client.Object, want ...string) {
	t.Helper()
	err := crs.Create(context.Background(), obj)
	if err == nil {
		_ = crs.Delete(context.Background(), obj)
		t.Errorf("%T %s admitted; want a refusal saying %q", obj, obj.GetName(), want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) || !(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) {
			t.Errorf("%T %s: %v; want a refusal saying %q", obj, obj.GetName(), err, w)
		}
	}
}
