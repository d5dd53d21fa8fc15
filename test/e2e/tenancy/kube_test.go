package tenancy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/webhook"
	"github.com/sluicehq/sluice/test/e2e"
)

// kubeTenant is a Kubernetes user with the edit role in one namespace of her own,
// labelled team=vision (the seeded site's vision queue admits it), as a cluster admin
// would onboard a team member.
func kubeTenant(t *testing.T, s *site) (kubernetes.Interface, string) {
	t.Helper()
	ns := e2e.TeamNamespace(t, e2e.Rig(t), "vision")
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
	if _, err := s.kube.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(s.restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
	// The server registers its webhook as it starts; the API server calls it a moment later.
	e2e.WaitFor(t, "the webhook in effect", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := s.kube.CoreV1().Pods(ns).Create(ctx, sluicePod("probe", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return p.Labels[v1alpha1.QueueLabel] != "", fmt.Errorf("a dry-run pod came back without a queue label")
	})
	tenant := kubernetes.NewForConfigOrDie(cfg)
	// ... and its admission policy.
	e2e.WaitFor(t, "the admission policy in effect", time.Minute, func(ctx context.Context) (bool, error) {
		p := sluicePod("probe", map[string]string{v1alpha1.JobIDLabel: "1"}, nil)
		p.Spec.SchedulerName = "default-scheduler"
		_, err := tenant.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), webhook.PolicyName), err
	})
	return tenant, ns
}

func sluicePod(name string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/eval:latest"}}},
	}
}

// Naming a queue does not let a namespace charge it: a pod naming the nlp queue from a
// vision namespace is refused, with the queues that namespace may use.
func TestKubeTenantCannotChargeAnotherTeam(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	_, err := tenant.CoreV1().Pods(ns).Create(ctx, sluicePod("charge-nlp", map[string]string{v1alpha1.QueueLabel: "nlp"}, nil), metav1.CreateOptions{})
	want := []string{fmt.Sprintf(`queue "nlp" does not admit namespace %q`, ns), "queues this namespace may use: default, vision"}
	if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want) {
		t.Fatalf("error %v, want 403 saying %q", err, want)
	}
	if _, err := s.kube.CoreV1().Pods(ns).Get(ctx, "charge-nlp", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod exists: %v", err)
	}
	// KAI's label is checked alike; the team's own queue is fine.
	_, err = tenant.CoreV1().Pods(ns).Create(ctx, sluicePod("kai-nlp", map[string]string{v1alpha1.KAIQueueLabel: "nlp"}, nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("kai.scheduler/queue: nlp from a vision namespace: %v, want 403", err)
	}
	if _, err := tenant.CoreV1().Pods(ns).Create(ctx, sluicePod("own", map[string]string{v1alpha1.QueueLabel: "vision"}, nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("the team's own queue: %v", err)
	}
}

// The attack from issue 15: a pod created with a job id label and a forged derived group
// kept the id, and alice then got 403 on her own job. Now the pod gets Sluice's own id,
// alice's job stays hers, and changing the label afterwards is refused.
func TestKubeTenantCannotForgeAJobID(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	id := s.submitOK(t, alice, nil)
	forged := map[string]string{v1alpha1.PodGroupAnnotation: "x", v1alpha1.PodGroupDerivedAnnotation: "true"}
	pod, err := tenant.CoreV1().Pods(ns).Create(ctx, sluicePod("forged", map[string]string{v1alpha1.JobIDLabel: id}, forged), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Labels[v1alpha1.JobIDLabel]; got == id || pod.Annotations[v1alpha1.PodGroupAnnotation] != "forged-job"+got {
		t.Errorf("pod job id %q group %q; want an id of Sluice's (not alice's %s) and its own group", got, pod.Annotations[v1alpha1.PodGroupAnnotation], id)
	}
	r := s.get(t, alice, api+"/job/"+id)
	r.requireOK(t)
	if jobs, _ := r.doc["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["user_name"] != alice {
		t.Errorf("alice's job %s after the forgery: %s", id, r.body)
	}
	_, err = tenant.CoreV1().Pods(ns).Patch(ctx, "forged", types.StrategicMergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.JobIDLabel, id)), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !containsAll(err.Error(), []string{webhook.PolicyName, "only Sluice changes sluice.dev/job-id"}) {
		t.Errorf("relabelling the pod with alice's id: %v, want the policy's refusal", err)
	}
	after, err := s.kube.CoreV1().Pods(ns).Get(ctx, "forged", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Labels[v1alpha1.JobIDLabel] != pod.Labels[v1alpha1.JobIDLabel] {
		t.Errorf("job id changed from %q to %q", pod.Labels[v1alpha1.JobIDLabel], after.Labels[v1alpha1.JobIDLabel])
	}
}

// The webhook answers only the API server: a direct AdmissionReview, without the API
// server's client certificate, fails the TLS handshake, so it never reaches the handler
// (nothing learned, no job id taken: the webhook package's rig test counts the ids),
// while pods through the API server are still admitted.
func TestWebhookRefusesCallersOtherThanTheAPIServer(t *testing.T) {
	s := siteFor(t)
	ctx := context.Background()
	mwc, err := s.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhook.DefaultConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc := mwc.Webhooks[0].ClientConfig
	if cc.URL == nil {
		t.Fatalf("the webhook is registered by Service, want the URL sluice dev registers: %+v", cc)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cc.CABundle)
	admin, err := tls.X509KeyPair(s.restConfig.CertData, s.restConfig.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","kind":{"version":"v1","kind":"Pod"},` +
		`"resource":{"version":"v1","resource":"pods"},"namespace":"nlp","operation":"CREATE",` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"direct","namespace":"nlp"},"spec":{"schedulerName":"sluice","containers":[{"name":"c","image":"x"}]}}}}`
	for name, certs := range map[string][]tls.Certificate{"no client certificate": nil, "the cluster admin's certificate": {admin}} {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		resp, err := hc.Post(*cc.URL, "application/json", strings.NewReader(review))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: answered %s, want the TLS handshake refused", name, resp.Status)
		}
	}
	// The API server, presenting its certificate, is answered.
	tenant, ns := kubeTenant(t, s)
	pod, err := tenant.CoreV1().Pods(ns).Create(ctx, sluicePod("through-the-api-server", nil, nil), metav1.CreateOptions{})
	if err != nil || v1alpha1.JobIDOf(pod.Labels) == 0 {
		t.Errorf("a bare pod through the API server: %v, labels %v; want it numbered by the webhook", err, pod.Labels)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
