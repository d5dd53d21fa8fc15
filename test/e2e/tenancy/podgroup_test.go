package tenancy

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/test/e2e"
)

// A tenant with rights on PodGroups in its namespace deletes its running Job's
// PodGroup to run its GPUs outside the queue's quota: the group is written again (an
// Event says why), the queue stays charged for the GPUs, and the ledger keeps the job
// running rather than calling it cancelled.
func TestDeletingARunningJobsPodGroupDoesNotFreeItsQuota(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "podgroups"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"podgroups"},
		Verbs: []string{"get", "list", "watch", "delete", "update", "patch"}}}}
	if _, err := s.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-podgroups"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "podgroups"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
	if _, err := s.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := sluicePod("", map[string]string{v1alpha1.QueueLabel: "vision"}, nil)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("3")}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}}}
	if _, err := tenant.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var group string
	e2e.WaitFor(t, "the Job's pod bound", 2*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := s.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=train"})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		group = pods.Items[0].Annotations[v1alpha1.PodGroupAnnotation]
		return pods.Items[0].Spec.NodeName != "" && group != "", nil
	})
	var first v1alpha1.PodGroup
	if err := s.crs.Get(ctx, client.ObjectKey{Namespace: ns, Name: group}, &first); err != nil {
		t.Fatal(err)
	}
	id := first.Labels[v1alpha1.JobIDLabel]
	s.waitAccounted(t, id)

	gvr := v1alpha1.GroupVersion.WithResource("podgroups")
	if err := tenantDynamic(t, s).Resource(gvr).Namespace(ns).Delete(ctx, group, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the tenant deleting its PodGroup: %v", err)
	}
	e2e.WaitFor(t, "the PodGroup written again", time.Minute, func(ctx context.Context) (bool, error) {
		var again v1alpha1.PodGroup
		err := s.crs.Get(ctx, client.ObjectKey{Namespace: ns, Name: group}, &again)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return again.UID != first.UID && again.Spec.Queue == "vision" && again.Labels[v1alpha1.JobIDLabel] == id, nil
	})
	e2e.WaitFor(t, "an Event saying why", time.Minute, func(ctx context.Context) (bool, error) {
		evs, err := s.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + scheduler.ReasonPodGroupRestored})
		return err == nil && len(evs.Items) > 0, err
	})
	e2e.WaitFor(t, "queue vision charged for the 3 GPUs", time.Minute, func(ctx context.Context) (bool, error) {
		var q v1alpha1.Queue
		if err := s.crs.Get(ctx, client.ObjectKey{Name: "vision"}, &q); err != nil {
			return false, err
		}
		if g := q.Status.Allocated.GPU; g == nil || g.Cmp(resource.MustParse("3")) < 0 {
			return false, fmt.Errorf("queue vision allocated %v GPUs", g)
		}
		return true, nil
	})
	e2e.WaitFor(t, "the ledger showing the job running", time.Minute, func(context.Context) (bool, error) {
		st := fmt.Sprint(s.waitAccounted(t, id)["state"])
		return st == "map[current:[RUNNING] reason:None]", fmt.Errorf("sacct state %s", st)
	})
	// Ending the workload ends the job, and the group is not written again.
	fg := metav1.DeletePropagationForeground
	if err := tenant.BatchV1().Jobs(ns).Delete(ctx, "train", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "the Job, its pod and its PodGroup gone", 2*time.Minute, func(ctx context.Context) (bool, error) {
		var pg v1alpha1.PodGroup
		err := s.crs.Get(ctx, client.ObjectKey{Namespace: ns, Name: group}, &pg)
		if err == nil {
			return false, fmt.Errorf("PodGroup %s still there (uid %s)", group, pg.UID)
		}
		pods, perr := s.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=train"})
		return client.IgnoreNotFound(err) == nil && perr == nil && len(pods.Items) == 0, perr
	})
}

// tenantDynamic is a dynamic client with the rights of kubeTenant's user.
func tenantDynamic(t *testing.T, s *site) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(s.restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
	return dynamic.NewForConfigOrDie(cfg)
}
