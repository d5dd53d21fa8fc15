package chart

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// runServerWithChartCredentials runs `sluice server` outside the cluster with
// the chart's configuration and JWT key, authenticated only by a token of the
// chart's server ServiceAccount. Outside the cluster the webhook is registered
// by URL on loopback instead of behind its Service; everything else is as
// rendered. It checks each component got what it needs: the Lease, the webhook's
// certificate made by cert-controller in its Secret with the chart's RBAC and
// registered with that CA, a Slurm submission (namespace,
// job id counter, PodGroup) placed by the scheduler (its pod created bound),
// a manifest Job grouped, mutated by the webhook and bound, and no
// "forbidden" anywhere in the log.
func runServerWithChartCredentials(t *testing.T, c *cluster.Cluster, ns string, objs []*unstructured.Unstructured) {
	dir := t.TempDir()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(configText(t, objs)), &cfg); err != nil {
		t.Fatal(err)
	}
	hook := cfg["webhook"].(map[string]any)
	// webhook.certDir keeps its place relative to stateDir, as in the pod.
	stateDir := filepath.Join(dir, "state")
	rel, err := filepath.Rel(cfg["stateDir"].(string), hook["certDir"].(string))
	if err != nil {
		t.Fatal(err)
	}
	webhookDir := filepath.Join(stateDir, rel)
	if err := os.MkdirAll(webhookDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The Deployment's empty memory volume: the server copies its certificate there.
	jwtKey := secretValue(t, find(t, objs, "Secret", "sluice-jwt"), "jwt.key")
	keyFile := filepath.Join(dir, "jwt.key")
	writeFile(t, keyFile, jwtKey)

	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, tokenConfig(t, c, ns, "sluice-server"))
	cfg["kubeconfig"], cfg["stateDir"], cfg["listen"] = kubeconfig, stateDir, "127.0.0.1:0"
	// The rig has no PostgreSQL: the DSN file (the chart's Secret in a pod)
	// names a SQLite file instead, which the server must open.
	ledgerFile := filepath.Join(dir, "ledger-from-dsn-file.db")
	dsnFile := filepath.Join(dir, "dsn")
	writeFile(t, dsnFile, []byte(ledgerFile+"\n"))
	cfg["accounting"].(map[string]any)["dsnFile"] = dsnFile
	cfg["rest"].(map[string]any)["jwtKeyFile"] = keyFile
	hook["certDir"] = webhookDir
	// The site's identity files and LDAP bind password the Deployment mounts
	// (identity.configMap, identity.ldapBindSecret), here at this machine's paths;
	// the server reads the files as it starts. alice is mapped in slurm.users, before them.
	identity := cfg["slurm"].(map[string]any)["identity"].(map[string]any)
	ldap := identity["ldap"].(map[string]any)
	identity["passwdFile"], identity["groupFile"] = filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	ldap["caFile"], ldap["bindPasswordFile"] = filepath.Join(dir, "ldap-ca.crt"), filepath.Join(dir, "ldap-password")
	writeFile(t, identity["passwdFile"].(string), []byte("bob:x:1002:1002::/home/bob:/bin/bash\n"))
	writeFile(t, identity["groupFile"].(string), []byte("vision:x:2001:bob\n"))
	anyCA, err := os.ReadFile(c.WebhookClientCA)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ldap["caFile"].(string), anyCA) // any CA will do: no lookup reaches LDAP
	writeFile(t, ldap["bindPasswordFile"].(string), []byte("secret\n"))
	hook["addr"], hook["hosts"], hook["serviceName"], hook["serviceNamespace"] = "127.0.0.1:0", []string{"localhost"}, "", ""
	t.Cleanup(func() {
		// The registration outlives the process; leave no webhook pointing at nothing.
		_ = c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), "sluice", metav1.DeleteOptions{})
	})
	srv := sluiceproc.Start(t, "sluice server", cfg)

	base := "http://" + srv.Addr()
	e2e.WaitFor(t, "server /readyz", time.Minute, func(ctx context.Context) (bool, error) {
		select {
		case <-srv.Exited():
			t.Fatalf("the server exited:\n%s", srv.Log())
		default:
		}
		code, body := get(ctx, base+"/readyz")
		return code == http.StatusOK, fmt.Errorf("%d %s", code, body)
	})
	leaseName := cfg["leaderElection"].(map[string]any)["leaseName"].(string)
	e2e.WaitFor(t, "Lease "+ns+"/"+leaseName+" held", time.Minute, func(ctx context.Context) (bool, error) {
		l, err := c.Client().CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
	e2e.WaitFor(t, "webhook registered with the CA of its Secret", time.Minute, func(ctx context.Context) (bool, error) {
		mwc, err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "sluice", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		secret, err := c.Client().CoreV1().Secrets(ns).Get(ctx, "sluice-webhook-certs", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ca := secret.Data["ca.crt"]
		return len(ca) > 0 && bytes.Equal(mwc.Webhooks[0].ClientConfig.CABundle, ca), fmt.Errorf("caBundle is not the CA of Secret sluice-webhook-certs")
	})
	if _, err := os.Stat(filepath.Join(webhookDir, "tls.crt")); err != nil {
		t.Errorf("the serving certificate copied to webhook.certDir: %v", err)
	}

	// A Slurm submission as alice (account nlp in the example site), signed
	// with the chart's key: a namespace, a job id from the counter, a PodGroup.
	tok, err := slurmapi.MintToken(jwtKey, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"script":"#!/bin/bash\nnvidia-smi\n","job":{"environment":["PATH=/bin:/usr/bin"],"tres_per_node":"gres/gpu:1"}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/slurm/v0.0.44/job/submit", strings.NewReader(body))
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submit: %d %s", resp.StatusCode, answer)
	}
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	pgs := schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "podgroups"}
	e2e.WaitFor(t, "the submitted job's PodGroup", 30*time.Second, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(pgs).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.JobIDLabel})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 1, fmt.Errorf("%d PodGroups with a job id (answer %s)", len(list.Items), answer)
	})
	if _, err := c.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "sluice-job-ids", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("no job id counter in %s: %v", ns, err)
	}
	slurmJobPlaced(t, c)
	manifestJobPlaced(t, c)
	barePodPlaced(t, c, base, jwtKey)
	if _, err := os.Stat(ledgerFile); err != nil {
		t.Errorf("the ledger named by accounting.dsnFile: %v", err)
	}
	if strings.Contains(strings.ToLower(srv.Log()), "forbidden") {
		t.Errorf("the server was refused something with the chart's RBAC:\n%s", srv.Log())
	}
}

// slurmJobPlaced: the scheduler (leader only) placed the submitted job: its
// pod exists, created already bound to a node.
func slurmJobPlaced(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	e2e.WaitFor(t, "the Slurm job's pod created bound", time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := c.Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.JobIDLabel})
		if err != nil {
			return false, err
		}
		if len(pods.Items) == 0 {
			return false, fmt.Errorf("no pod with a job id yet")
		}
		p := pods.Items[0]
		return p.Spec.NodeName != "", fmt.Errorf("pod %s/%s has no node", p.Namespace, p.Name)
	})
}

func secretValue(t testing.TB, secret *unstructured.Unstructured, key string) []byte {
	t.Helper()
	enc, _, _ := unstructured.NestedString(secret.Object, "data", key)
	v, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(v) == 0 {
		t.Fatalf("Secret %s key %s: %q (%v)", secret.GetName(), key, enc, err)
	}
	return v
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeKubeconfig writes cfg (a token and the CA) as a kubeconfig file.
func writeKubeconfig(t testing.TB, path string, cfg *rest.Config) {
	t.Helper()
	if err := WriteKubeconfig(path, "sluice-server", cfg); err != nil {
		t.Fatal(err)
	}
}

func get(ctx context.Context, url string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
