package chart

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestChartOnRig applies everything the chart renders with every option on
// to the rig's kube-apiserver by server-side apply, then checks the
// ServiceAccounts' permissions: each verb the server and the agent use is
// allowed, and what they do not use (Secrets above all) is not.
func TestChartOnRig(t *testing.T) {
	c := e2e.Rig(t)
	ns := e2e.Namespace(t, c)
	objs := render(t, ns, filepath.Join("testdata", "all-on.yaml"))
	skipped := apply(t, c.RESTConfig(), objs)
	// The rig has no Prometheus Operator: its ServiceMonitor kind is the only
	// one the API server cannot take.
	if !slices.Equal(skipped, []string{"ServiceMonitor"}) {
		t.Fatalf("kinds the rig does not serve: %v, want only [ServiceMonitor]", skipped)
	}

	server := "system:serviceaccount:" + ns + ":sluice-server"
	agent := "system:serviceaccount:" + ns + ":sluice-agent"
	t.Run("server may do what it does", func(t *testing.T) {
		for _, a := range serverNeeds(ns) {
			checkAccess(t, c.Client(), server, a, true)
		}
	})
	t.Run("server may not do what it does not", func(t *testing.T) {
		for _, a := range serverMustNot(ns) {
			checkAccess(t, c.Client(), server, a, false)
		}
	})
	t.Run("agent may do what it does", func(t *testing.T) {
		for _, a := range agentNeeds() {
			checkAccess(t, c.Client(), agent, a, true)
		}
	})
	t.Run("agent may not do what it does not", func(t *testing.T) {
		for _, a := range agentMustNot(ns) {
			checkAccess(t, c.Client(), agent, a, false)
		}
	})
	t.Run("the server's own token reads no Secrets outside its namespace", func(t *testing.T) {
		kube := kubernetes.NewForConfigOrDie(tokenConfig(t, c, ns, "sluice-server"))
		ctx := context.Background()
		for _, secretNS := range []string{"kube-system", ""} {
			if _, err := kube.CoreV1().Secrets(secretNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("listing Secrets in %q with the server's token: %v, want Forbidden", secretNS, err)
			}
		}
		if _, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Errorf("listing pods with the server's token: %v", err)
		}
	})
	t.Run("a GPU reservation pod may annotate pods of the server's namespace, nothing else", func(t *testing.T) {
		reservation := "system:serviceaccount:" + ns + ":sluice-gpu-reservation"
		for _, a := range []access{{verb: "get", resource: "pods", namespace: ns}, {verb: "patch", resource: "pods", namespace: ns}} {
			checkAccess(t, c.Client(), reservation, a, true)
		}
		for _, a := range []access{
			{verb: "patch", resource: "pods", namespace: "team-a"}, {verb: "create", resource: "pods", namespace: ns},
			{verb: "delete", resource: "pods", namespace: ns}, {verb: "get", resource: "secrets", namespace: ns},
			{verb: "patch", resource: "nodes"},
		} {
			checkAccess(t, c.Client(), reservation, a, false)
		}
	})
	t.Run("the agent changes only its own node", func(t *testing.T) {
		agentChangesOnlyItsOwnNode(t, c, ns)
	})
	t.Run("every server replica has a memory volume for the webhook certificate", func(t *testing.T) {
		replicasHaveCertVolume(t, c, ns, objs)
	})
	t.Run("sluice server runs with the chart's config and credentials", func(t *testing.T) {
		runServerWithChartCredentials(t, c, ns, objs)
	})
}

// access is one request attribute checked with a SubjectAccessReview.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		where += " named " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

// serverNeeds lists each API call of the server's components (see the
// comments in charts/sluice/templates/rbac-server.yaml for who makes it).
func serverNeeds(ns string) []access {
	const sched = "scheduling.sluice.dev"
	out := []access{
		{verb: "create", resource: "pods", subresource: "binding", namespace: "team-a"},
		{verb: "create", resource: "pods", subresource: "eviction", namespace: "team-a"},
		{verb: "create", resource: "pods", namespace: "slurm-nlp"},
		{verb: "patch", resource: "pods", namespace: "team-a"},
		{verb: "delete", resource: "pods", namespace: "kube-system"},
		{verb: "deletecollection", resource: "pods", namespace: "slurm-nlp"},
		{verb: "update", resource: "nodes", name: "h100-0"},
		{verb: "create", resource: "namespaces"},
		{verb: "get", resource: "namespaces", name: "team-a"},
		{verb: "create", resource: "services", namespace: "slurm-nlp"},
		{verb: "create", resource: "secrets", namespace: "slurm-nlp"}, // a multi-node job's launch key
		{verb: "create", resource: "events", namespace: "team-a"},
		{verb: "patch", resource: "events", namespace: "team-a"},
		{verb: "create", group: sched, resource: "podgroups", namespace: "team-a"},
		{verb: "update", group: sched, resource: "podgroups", namespace: "slurm-nlp"},
		{verb: "delete", group: sched, resource: "podgroups", namespace: "team-a"},
		{verb: "update", group: sched, resource: "podgroups", subresource: "status", namespace: "slurm-nlp"},
		{verb: "patch", group: sched, resource: "podgroups", subresource: "status", namespace: "team-a"},
		{verb: "patch", group: sched, resource: "queues", subresource: "status"},
		{verb: "create", group: sched, resource: "queues"},
		{verb: "update", group: sched, resource: "qoses", name: "normal"},
		{verb: "delete", group: sched, resource: "qoses", name: "normal"},
		{verb: "get", group: sched, resource: "partitions", name: "h100"},
		{verb: "get", group: "scheduling.k8s.io", resource: "priorityclasses", name: "inference"}, // KAI's priorityClassName label
		{verb: "create", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "sluice"},
		// The webhook's certificate Secret: created when missing, listed and watched by
		// cert-controller's cache, written by its rotator.
		{verb: "create", resource: "secrets", namespace: ns},
		{verb: "list", resource: "secrets", namespace: ns},
		{verb: "watch", resource: "secrets", namespace: ns},
		{verb: "update", resource: "secrets", namespace: ns, name: "sluice-webhook-certs"},
		{verb: "list", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "watch", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", name: "sluice-owned-metadata"},
		{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings", name: "sluice-owned-metadata"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: ns},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "sluice-server"},
		{verb: "create", resource: "configmaps", namespace: ns},
		{verb: "get", resource: "configmaps", namespace: ns, name: "sluice-job-ids"},
		{verb: "get", resource: "configmaps", namespace: ns, name: "submit-key-0123456789abcdef0123456789abcdef"},
		{verb: "update", resource: "configmaps", namespace: ns, name: "sluice-job-ids"},
		{verb: "patch", resource: "configmaps", namespace: ns, name: "submit-batch-1"}, // the scheduler's pending reasons
		{verb: "get", group: "batch", resource: "jobs", namespace: "team-a"},
		{verb: "get", group: "jobset.x-k8s.io", resource: "jobsets", namespace: "team-a"},
		{verb: "get", group: "kubeflow.org", resource: "pytorchjobs", namespace: "team-a"},
		{verb: "get", group: "kubeflow.org", resource: "mpijobs", namespace: "team-a"},
		{verb: "get", group: "ray.io", resource: "rayjobs", namespace: "team-a"},
		{verb: "get", group: "ray.io", resource: "rayclusters", namespace: "team-a"},
		{verb: "get", group: "leaderworkerset.x-k8s.io", resource: "leaderworkersets", namespace: "team-a"},
		{verb: "get", group: "argoproj.io", resource: "workflows", namespace: "team-a"},
		{verb: "update", group: "resource.k8s.io", resource: "resourceclaims", namespace: "team-a"},
		{verb: "create", group: "resource.k8s.io", resource: "resourceclaims", namespace: "team-a"},
		{verb: "delete", group: "resource.k8s.io", resource: "resourceclaims", namespace: "team-a"},
		{verb: "update", group: "resource.k8s.io", resource: "resourceclaims", subresource: "status", namespace: "team-a"},
		{verb: "update", group: "resource.k8s.io", resource: "resourceclaims", subresource: "binding"}, // the allocation, at the cluster scope
	}
	// Every informer: list and watch cluster-wide.
	for _, r := range []struct{ group, resource string }{{"", "pods"}, {"", "nodes"}, {"", "namespaces"},
		{"", "persistentvolumeclaims"}, {"", "persistentvolumes"}, {"storage.k8s.io", "storageclasses"},
		{"resource.k8s.io", "resourceslices"}, {"resource.k8s.io", "deviceclasses"}, {"resource.k8s.io", "resourceclaims"},
		{"resource.k8s.io", "resourceclaimtemplates"},
		{sched, "podgroups"}, {sched, "queues"}, {sched, "qoses"}, {sched, "partitions"}} {
		for _, verb := range []string{"list", "watch"} {
			out = append(out, access{verb: verb, group: r.group, resource: r.resource})
		}
	}
	return out
}

func serverMustNot(ns string) []access {
	return []access{
		{verb: "get", resource: "secrets", namespace: "kube-system", name: "anything"},
		{verb: "list", resource: "secrets", namespace: "kube-system"},
		{verb: "list", resource: "secrets"},
		{verb: "get", resource: "secrets", namespace: ns, name: "sluice-jwt"},
		{verb: "update", resource: "secrets", namespace: ns, name: "sluice-jwt"},
		{verb: "delete", resource: "secrets", namespace: ns, name: "sluice-webhook-certs"},
		{verb: "delete", resource: "nodes", name: "h100-0"},
		{verb: "delete", resource: "namespaces", name: "team-a"},
		{verb: "update", resource: "configmaps", namespace: ns, name: "other"},
		{verb: "get", resource: "configmaps", namespace: "kube-system", name: "sluice-job-ids"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-scheduler"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "someone-else"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", name: "someone-else"},
		{verb: "delete", group: "scheduling.sluice.dev", resource: "partitions", name: "h100"},
		{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		{verb: "create", group: "batch", resource: "jobs", namespace: "team-a"},
		{verb: "impersonate", resource: "serviceaccounts", namespace: "kube-system"},
	}
}

func agentNeeds() []access {
	return []access{
		{verb: "get", resource: "nodes", name: "h100-0"},
		{verb: "patch", resource: "nodes", name: "h100-0"},
		{verb: "patch", resource: "nodes", subresource: "status", name: "h100-0"},
		{verb: "create", resource: "events", namespace: "default"},
		{verb: "patch", resource: "events", namespace: "default"},
	}
}

func agentMustNot(ns string) []access {
	return []access{
		{verb: "get", resource: "secrets", namespace: ns, name: "sluice-jwt"},
		{verb: "list", resource: "pods"},
		{verb: "update", resource: "nodes", name: "h100-0"},
		{verb: "delete", resource: "nodes", name: "h100-0"},
		{verb: "create", resource: "pods", subresource: "eviction", namespace: "team-a"},
		{verb: "list", group: "scheduling.sluice.dev", resource: "podgroups"},
	}
}

// checkAccess asks the API server's authorizer whether user may do a.
func checkAccess(t *testing.T, kube kubernetes.Interface, user string, a access, want bool) {
	t.Helper()
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:serviceaccounts", "system:authenticated"},
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview %s: %v", a, err)
	}
	if got.Status.Allowed != want {
		t.Errorf("%s may %s: allowed=%v, want %v (%s)", user, a, got.Status.Allowed, want, got.Status.Reason)
	}
}

// tokenConfig is a client configuration for the ServiceAccount, authenticated
// only by a token from the TokenRequest API (no client certificate).
func tokenConfig(t *testing.T, c *cluster.Cluster, ns, sa string) *rest.Config {
	t.Helper()
	return boundTokenConfig(t, c, ns, sa, nil)
}

// boundTokenConfig is tokenConfig with the token bound to ref, as the
// kubelet binds the token it projects into a pod to that pod (nil: unbound).
func boundTokenConfig(t *testing.T, c *cluster.Cluster, ns, sa string, ref *authnv1.BoundObjectReference) *rest.Config {
	t.Helper()
	cfg, err := TokenConfig(context.Background(), c.Client(), c.RESTConfig(), ns, sa, time.Hour, ref)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// apply server-side-applies the CRDs, waits until they are Established, then
// applies everything else (Apply). It returns the kinds the API server does not serve.
func apply(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) (skipped []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	skipped, err := Apply(ctx, cfg, "sluice-chart-test", objs)
	if err != nil {
		t.Fatal(err)
	}
	return skipped
}

// replicasHaveCertVolume: the chart renders no webhook Secret (the server makes its
// own, which every replica copies its serving certificate from), and each pod the
// Deployment's ReplicaSet made has a memory emptyDir at webhook.certDir to copy it to.
func replicasHaveCertVolume(t *testing.T, c *cluster.Cluster, ns string, objs []*unstructured.Unstructured) {
	ctx := context.Background()
	if _, err := c.Client().CoreV1().Secrets(ns).Get(ctx, "sluice-webhook-certs", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the webhook Secret after apply, before any server ran: %v, want NotFound", err)
	}
	certDir := serverConfig(t, objs).Webhook.CertDir
	replicas, _, _ := unstructured.NestedInt64(find(t, objs, "Deployment", "sluice-server").Object, "spec", "replicas")
	if replicas < 2 {
		t.Fatalf("all-on values render %d server replicas; the check needs 2 or more", replicas)
	}
	sel := "app.kubernetes.io/instance=sluice,app.kubernetes.io/component=server"
	e2e.WaitFor(t, fmt.Sprintf("%d server pods with a memory volume at %s", replicas, certDir), time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		if int64(len(pods.Items)) != replicas {
			return false, fmt.Errorf("%d server pods", len(pods.Items))
		}
		for _, p := range pods.Items {
			if !memoryVolumeAt(p.Spec, certDir) {
				return false, fmt.Errorf("pod %s has no memory emptyDir at %s", p.Name, certDir)
			}
		}
		return true, nil
	})
}

// memoryVolumeAt says whether the pod's first container mounts a memory emptyDir, writable, at dir.
func memoryVolumeAt(spec corev1.PodSpec, dir string) bool {
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.MountPath != dir || m.ReadOnly {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
				return true
			}
		}
	}
	return false
}
