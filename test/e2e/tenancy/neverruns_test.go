package tenancy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// Requests no node can ever satisfy pend with a reason that says so, as Slurm's
// PartitionConfig or BadConstraints do, never with reason None: a share of 99999999999
// MiB of one GPU, and a gang whose PodGroup wants 2^31-1 members.
func TestRequestsThatCanNeverRunSayWhy(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	huge := sluicePod("huge-share", map[string]string{v1alpha1.QueueLabel: "vision"}, map[string]string{v1alpha1.GPUMemoryAnnotation: "99999999999"})
	pod, err := tenant.CoreV1().Pods(ns).Create(ctx, huge, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireNeverReason(t, s, pod.Labels[v1alpha1.JobIDLabel])
	requireScheduledMessage(t, s, client.ObjectKey{Namespace: ns, Name: pod.Annotations[v1alpha1.PodGroupAnnotation]}, "can ever")

	gang := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "endless", Namespace: ns},
		Spec: v1alpha1.PodGroupSpec{Queue: "vision", MinMember: 1<<31 - 1}}
	err = s.crs.Create(ctx, gang)
	if err != nil {
		// Refused at the API server is as good an answer; it must say why.
		if !strings.Contains(err.Error(), "minMember") {
			t.Fatalf("PodGroup with minMember 2^31-1 refused without naming the field: %v", err)
		}
		return
	}
	member := sluicePod("endless-0", map[string]string{v1alpha1.QueueLabel: "vision"}, map[string]string{v1alpha1.PodGroupAnnotation: "endless"})
	if _, err := tenant.CoreV1().Pods(ns).Create(ctx, member, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requireScheduledMessage(t, s, client.ObjectKeyFromObject(gang), "2147483647")
}

// requireNeverReason waits until squeue shows job id pending with a reason that says it
// can never run as asked.
func requireNeverReason(t *testing.T, s *site, id string) {
	t.Helper()
	if id == "" {
		t.Fatal("the pod got no job id")
	}
	e2e.WaitFor(t, "job "+id+" pending with a reason", time.Minute, func(context.Context) (bool, error) {
		j := s.job(t, id)
		reason, _ := j["state_reason"].(string)
		if state(j) != "PENDING" || (reason != "PartitionConfig" && reason != "BadConstraints") {
			return false, fmt.Errorf("state %s reason %q", state(j), reason)
		}
		return true, nil
	})
}

// requireScheduledMessage waits until the PodGroup key says, in its Scheduled condition,
// why it waits, in a message holding want.
func requireScheduledMessage(t *testing.T, s *site, key client.ObjectKey, want string) {
	t.Helper()
	e2e.WaitFor(t, "PodGroup "+key.String()+" saying why it waits", time.Minute, func(ctx context.Context) (bool, error) {
		var pg v1alpha1.PodGroup
		if err := s.crs.Get(ctx, key, &pg); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, want) {
			return false, fmt.Errorf("Scheduled condition %+v", c)
		}
		return true, nil
	})
}
