package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// tenancyRig is the webhook as the server runs it (queue access, the API server's client
// certificate required, ids counted) plus the admission policy exempting the rig's server
// identity, and a tenant "mallory" with the edit role in two namespaces of her own.
type tenancyRig struct {
	c               *cluster.Cluster
	admin, sluice   kubernetes.Interface
	tenant          kubernetes.Interface
	tenantCRs       client.Client
	hook            *runningWebhook
	ids             *atomic.Uint32
	visionNS, nlpNS string
	openQ, nlpQ     string
}

func startTenancyRig(t *testing.T) *tenancyRig {
	t.Helper()
	c := e2e.Rig(t)
	ctx := context.Background()
	if err := crds.Install(ctx, c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	r := &tenancyRig{c: c, admin: c.Client(), ids: new(atomic.Uint32), openQ: "tenancy-open", nlpQ: "tenancy-nlp"}
	r.ids.Store(900)
	serverCfg, err := clientcmd.BuildConfigFromFlags("", c.ServerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	r.sluice = kubernetes.NewForConfigOrDie(serverCfg)
	crs := newCRClient(t, c.RESTConfig())
	for name, sel := range map[string]*metav1.LabelSelector{r.openQ: {}, r.nlpQ: {MatchLabels: map[string]string{"team": "tenancy-nlp"}}} {
		q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{NamespaceSelector: sel}}
		if err := crs.Create(ctx, q); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = crs.Delete(context.Background(), q) })
	}
	r.nlpNS = e2e.NamespaceWith(t, c, map[string]string{"team": "tenancy-nlp"})
	r.visionNS = e2e.NamespaceWith(t, c, map[string]string{"team": "tenancy-vision"})
	for _, ns := range []string{r.nlpNS, r.visionNS} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
		if _, err := r.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// edit does not cover Sluice's kinds: let her write PodGroups too, as a site might.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "podgroups"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"podgroups"}, Verbs: []string{"*"}}}}
		if _, err := r.admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-podgroups"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "podgroups"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
		if _, err := r.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tenantCfg := c.RESTConfig()
	tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
	r.tenant = kubernetes.NewForConfigOrDie(tenantCfg)
	r.tenantCRs = newCRClient(t, tenantCfg)

	r.hook = startWebhookWith(t, c, Config{Addr: "127.0.0.1:0", Client: r.admin,
		Queues: dynamic.NewForConfigOrDie(c.RESTConfig()), ClientCAFile: c.WebhookClientCA,
		JobIDs: func(context.Context) (uint32, error) { return r.ids.Add(1), nil }})
	if err := RegisterPolicy(ctx, r.admin, Policy{Users: []string{"sluice-server"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		api := r.admin.AdmissionregistrationV1()
		_ = api.MutatingWebhookConfigurations().Delete(ctx, DefaultConfigurationName, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, PolicyName, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(ctx, PolicyName, metav1.DeleteOptions{})
	})
	waitMutating(t, r.admin, r.nlpNS)
	// The policy is in effect once the API server refuses a made-up job id on a pod
	// the webhook does not see.
	e2e.WaitFor(t, "admission policy in effect", time.Minute, func(ctx context.Context) (bool, error) {
		p := testPod("default-scheduler", map[string]string{v1alpha1.JobIDLabel: "1"}, nil, nil)
		_, err := r.admin.CoreV1().Pods(r.nlpNS).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), PolicyName), err
	})
	return r
}

// TestTenantAttacksOnRig: a tenant with namespace-scoped rights, through the real API
// server, cannot charge another team's queue, forge or change what Sluice writes on pods
// and PodGroups, nor get anything out of the webhook without the API server's
// certificate; each refusal says why, and nothing changes.
func TestTenantAttacksOnRig(t *testing.T) {
	r := startTenancyRig(t)
	ctx := context.Background()

	t.Run("a pod naming a queue its namespace may not use is refused", func(t *testing.T) {
		taken := r.ids.Load()
		pod := testPod("sluice", map[string]string{v1alpha1.QueueLabel: r.nlpQ}, nil, nil)
		pod.GenerateName, pod.Name = "", "charge-nlp"
		_, err := r.tenant.CoreV1().Pods(r.visionNS).Create(ctx, pod, metav1.CreateOptions{})
		want := []string{fmt.Sprintf("queue %q does not admit namespace %q", r.nlpQ, r.visionNS), "queues this namespace may use: " + r.openQ}
		if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want) {
			t.Fatalf("error %v, want 403 saying %q", err, want)
		}
		if _, err := r.admin.CoreV1().Pods(r.visionNS).Get(ctx, "charge-nlp", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused pod exists: %v", err)
		}
		if r.ids.Load() != taken {
			t.Errorf("a refused pod took %d job ids", r.ids.Load()-taken)
		}
		// The team's own namespace may.
		pod.Name = "use-nlp"
		if _, err := r.tenant.CoreV1().Pods(r.nlpNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the team's namespace naming its queue: %v", err)
		}
	})

	t.Run("a forged job id and pod group are replaced at admission", func(t *testing.T) {
		pod := testPod("sluice", map[string]string{v1alpha1.JobIDLabel: "2"},
			map[string]string{v1alpha1.PodGroupAnnotation: "x", v1alpha1.PodGroupDerivedAnnotation: "true", v1alpha1.GPUAssignmentAnnotation: "[]"}, nil)
		pod.GenerateName, pod.Name = "", "forged"
		got, err := r.tenant.CoreV1().Pods(r.nlpNS).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if id := v1alpha1.JobIDOf(got.Labels); id == 2 || id <= 900 || got.Annotations[v1alpha1.PodGroupAnnotation] != fmt.Sprintf("forged-job%d", id) ||
			got.Annotations[v1alpha1.GPUAssignmentAnnotation] != "" {
			t.Errorf("labels %v annotations %v: want Sluice's own id and group, no GPU assignment", got.Labels, got.Annotations)
		}
	})

	t.Run("Sluice keys on a pod the webhook does not see are refused", func(t *testing.T) {
		pod := testPod("default-scheduler", map[string]string{v1alpha1.JobIDLabel: "2"},
			map[string]string{v1alpha1.PodGroupAnnotation: "x", v1alpha1.PodGroupDerivedAnnotation: "true"}, nil)
		_, err := r.tenant.CoreV1().Pods(r.nlpNS).Create(ctx, pod, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !containsAll(err.Error(), []string{PolicyName, "only Sluice sets", v1alpha1.JobIDLabel, v1alpha1.PodGroupDerivedAnnotation}) {
			t.Fatalf("error %v, want the policy's refusal naming the keys", err)
		}
	})

	t.Run("changing Sluice's labels on an existing pod is refused to all but Sluice", func(t *testing.T) {
		pod, err := r.admin.CoreV1().Pods(r.nlpNS).Get(ctx, "forged", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			who    string
			client kubernetes.Interface
			patch  string
		}{
			{"the tenant re-numbering", r.tenant, `{"metadata":{"labels":{"sluice.dev/job-id":"2"}}}`},
			{"the tenant changing the queue", r.tenant, fmt.Sprintf(`{"metadata":{"labels":{"sluice.dev/queue":%q}}}`, r.openQ)},
			{"the tenant dropping the group", r.tenant, `{"metadata":{"annotations":{"sluice.dev/pod-group":null}}}`},
			{"the tenant claiming GPUs", r.tenant, `{"metadata":{"annotations":{"sluice.dev/visible-devices":"GPU-0"}}}`},
			{"the cluster admin (system:masters)", r.admin, `{"metadata":{"labels":{"sluice.dev/job-id":"2"}}}`},
		} {
			_, err := c.client.CoreV1().Pods(r.nlpNS).Patch(ctx, "forged", types.StrategicMergePatchType, []byte(c.patch), metav1.PatchOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only Sluice changes") {
				t.Errorf("%s: error %v, want the policy's refusal", c.who, err)
			}
		}
		_, err = r.tenant.CoreV1().Pods(r.nlpNS).Patch(ctx, "forged", types.StrategicMergePatchType,
			[]byte(`{"metadata":{"annotations":{"note":"mine"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("the tenant's own annotation: %v", err)
		}
		after, err := r.admin.CoreV1().Pods(r.nlpNS).Get(ctx, "forged", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{v1alpha1.JobIDLabel, v1alpha1.QueueLabel} {
			if after.Labels[k] != pod.Labels[k] {
				t.Errorf("label %s changed from %q to %q", k, pod.Labels[k], after.Labels[k])
			}
		}
		// Sluice itself still writes what it owns.
		_, err = r.sluice.CoreV1().Pods(r.nlpNS).Patch(ctx, "forged", types.StrategicMergePatchType,
			[]byte(`{"metadata":{"annotations":{"sluice.dev/node-fault":"xid 79"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("Sluice's own write: %v", err)
		}
	})

	t.Run("PodGroups: no job id and no Slurm job from a tenant", func(t *testing.T) {
		for _, c := range []struct {
			name string
			pg   *v1alpha1.PodGroup
			want string
		}{
			{"job id", &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg-id", Labels: map[string]string{v1alpha1.JobIDLabel: "2"}},
				Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: r.openQ}}, "only Sluice sets sluice.dev/job-id"},
			{"priority", &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg-prio", Annotations: map[string]string{v1alpha1.PriorityAnnotation: "1000000"}},
				Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: r.openQ}}, "only Sluice sets sluice.dev/priority"},
			{"Slurm job", &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg-slurm"},
				Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: r.openQ, Slurm: &v1alpha1.SlurmJob{User: "alice"}}}, "spec.slurm"},
		} {
			c.pg.Namespace = r.nlpNS
			err := r.tenantCRs.Create(ctx, c.pg)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want a refusal saying %q", c.name, err, c.want)
			}
		}
	})

	t.Run("the webhook answers only the API server", func(t *testing.T) {
		taken := r.ids.Load()
		review := reviewFor(t, namedPod("direct", nil, nil), "CREATE")
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(r.hook.srv.CABundle())
		admin, err := tls.X509KeyPair(r.c.RESTConfig().CertData, r.c.RESTConfig().KeyData)
		if err != nil {
			t.Fatal(err)
		}
		for name, certs := range map[string][]tls.Certificate{"no client certificate": nil, "the cluster admin's certificate": {admin}} {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
			resp, err := hc.Post(r.hook.srv.URL(), "application/json", strings.NewReader(string(review)))
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s: answered %s, want the TLS handshake refused", name, resp.Status)
			}
		}
		if r.ids.Load() != taken {
			t.Errorf("direct reviews took %d job ids", r.ids.Load()-taken)
		}
	})
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// newCRClient is a controller-runtime client for Sluice's kinds, as cfg's user.
func newCRClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
