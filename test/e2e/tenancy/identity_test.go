package tenancy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestJobPodsNeverRunAsRoot: a tenant's Slurm job runs as the uid the site
// maps the user to, and a user the site maps to none (carol, given an
// association for the test) runs as the default non-root uid 65534, never
// as whatever user the image names: both with runAsNonRoot, so neither the
// job nor its image can make itself root, and with Strict supplemental
// groups, so the image's /etc/group adds none.
func TestJobPodsNeverRunAsRoot(t *testing.T) {
	s := siteFor(t)
	const carol = "carol"
	addQueueUser(t, s, "nlp", carol)

	mapped := s.submitOK(t, alice, nil)
	var unmapped string
	e2e.WaitFor(t, "carol's submission accepted once nlp lists her", 30*time.Second, func(context.Context) (bool, error) {
		r := s.submit(t, carol, nil)
		if r.status != 200 {
			return false, fmt.Errorf("%s", r)
		}
		unmapped = formatID(r.doc["job_id"].(float64))
		t.Cleanup(func() { s.del(t, operatorUser, api+"/job/"+unmapped) })
		return true, nil
	})
	for id, want := range map[string]kube.UserIDs{mapped: {UID: 1001, GID: 1001}, unmapped: kube.NobodyIDs} {
		pod := jobPod(t, s, id)
		sc := pod.Spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil || sc.RunAsNonRoot == nil {
			t.Fatalf("job %s pod %s security context %+v: want runAsUser, runAsGroup and runAsNonRoot", id, pod.Name, sc)
		}
		if got := (kube.UserIDs{UID: *sc.RunAsUser, GID: *sc.RunAsGroup}); got.UID != want.UID || got.GID != want.GID || !*sc.RunAsNonRoot {
			t.Errorf("job %s pod %s runs as %+v, non-root %v; want %+v, non-root", id, pod.Name, got, *sc.RunAsNonRoot, want)
		}
		// The rig's nodes report support, as kubelets over containerd 2.0 or CRI-O 1.31 do.
		if p := sc.SupplementalGroupsPolicy; p == nil || *p != corev1.SupplementalGroupsPolicyStrict {
			t.Errorf("job %s pod %s supplementalGroupsPolicy %v, want Strict", id, pod.Name, p)
		}
	}
}

// addQueueUser lists user on the queue for the test.
func addQueueUser(t *testing.T, s *site, queue, user string) {
	t.Helper()
	ctx := context.Background()
	var q v1alpha1.Queue
	if err := s.crs.Get(ctx, client.ObjectKey{Name: queue}, &q); err != nil {
		t.Fatal(err)
	}
	q.Spec.Users = append(q.Spec.Users, user)
	if err := s.crs.Update(ctx, &q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var q v1alpha1.Queue
		if err := s.crs.Get(context.Background(), client.ObjectKey{Name: queue}, &q); err == nil {
			q.Spec.Users = slices.DeleteFunc(q.Spec.Users, func(u string) bool { return u == user })
			_ = s.crs.Update(context.Background(), &q)
		}
	})
}

// jobPod waits for the job's first pod (created when it starts).
func jobPod(t *testing.T, s *site, id string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	e2e.WaitFor(t, "a pod of job "+id, time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := s.kube.CoreV1().Pods(kube.Namespace("nlp")).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.JobIDLabel + "=" + id})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Errorf("no pod yet (%v)", err)
		}
		pod = pods.Items[0]
		return true, nil
	})
	return pod
}
