package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// runningWebhook is a webhook server started by a test.
type runningWebhook struct {
	t    testing.TB
	srv  *Server
	stop context.CancelFunc
	done chan error
}

// startWebhook starts a webhook whose rotator keeps its certificate in secret.
func startWebhook(t *testing.T, c *cluster.Cluster, secret types.NamespacedName) *runningWebhook {
	t.Helper()
	return startWebhookWith(t, c, Config{Addr: "127.0.0.1:0", CertSecret: secret, Client: c.Client()})
}

// certSecret is a Secret for a test's rotator, in a namespace of its own.
func certSecret(t *testing.T, c *cluster.Cluster) types.NamespacedName {
	t.Helper()
	return types.NamespacedName{Namespace: e2e.Namespace(t, c), Name: DefaultCertSecret}
}

// startWebhookWith starts a webhook as cfg says (RESTConfig the rig's, CertDir a
// temporary directory and CertSecret one of its own where unset) and waits until it
// has registered itself.
func startWebhookWith(t *testing.T, c *cluster.Cluster, cfg Config) *runningWebhook {
	t.Helper()
	if cfg.RESTConfig == nil {
		cfg.RESTConfig = c.RESTConfig()
	}
	if cfg.CertDir == "" {
		cfg.CertDir = t.TempDir()
	}
	if cfg.CertSecret.Name == "" && !CertProvided(cfg.CertDir) {
		cfg.CertSecret = certSecret(t, c)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &runningWebhook{t: t, srv: srv, stop: stop, done: make(chan error, 1)}
	go func() { w.done <- srv.Run(ctx) }()
	t.Cleanup(w.shutdown)
	select {
	case <-srv.Ready():
	case err := <-w.done:
		w.done = nil
		t.Fatalf("webhook Run: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the webhook did not register itself within a minute")
	}
	return w
}

// shutdown stops the server and waits for Run to return; idempotent.
func (w *runningWebhook) shutdown() {
	if w.done == nil {
		return
	}
	w.stop()
	if err := <-w.done; err != nil {
		w.t.Errorf("webhook Run: %v", err)
	}
	w.done = nil
}

// checkHealthz calls /healthz as a probe would, trusting only the server's
// own CA bundle: the serving certificate must verify for the URL's host.
func checkHealthz(t *testing.T, srv *Server) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.CABundle())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Get(strings.TrimSuffix(srv.URL(), MutatePath) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}
}

// servedCert is the certificate the server presents now, verified with its CA bundle.
func servedCert(t *testing.T, srv *Server) *x509.Certificate {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.CABundle())
	conn, err := tls.Dial("tcp", srv.Addr(), &tls.Config{RootCAs: roots, ServerName: srv.cfg.Hosts[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// A certificate the site provides (CertSecret empty: a mounted Secret of cert-manager's)
// is served as it is, its ca.crt registered, and a renewed pair in its place is served
// without a restart.
func TestWebhookProvidedCertificateOnRig(t *testing.T) {
	c := e2e.Rig(t)
	client := c.Client()
	ctx := context.Background()
	dir := t.TempDir()
	r := &rotator.CertRotator{CAName: "site-ca", DNSName: "localhost", ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	now := time.Now()
	ca, err := r.CreateCACert(now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	issue := func() {
		cert, key, err := r.CreateCertPEM(ca, now.Add(-time.Hour), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, keyFile+".new"), key)
		writeTestFile(t, filepath.Join(dir, certFile+".new"), cert)
		for _, f := range []string{keyFile, certFile} {
			if err := os.Rename(filepath.Join(dir, f+".new"), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeTestFile(t, filepath.Join(dir, caFile), ca.CertPEM)
	issue()
	hook := startWebhookWith(t, c, Config{Addr: "127.0.0.1:0", CertDir: dir, Client: client})
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, DefaultConfigurationName, metav1.DeleteOptions{})
	})
	ns := e2e.Namespace(t, c)
	waitMutating(t, client, ns)
	mwc, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, DefaultConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mwc.Webhooks[0].ClientConfig.CABundle, ca.CertPEM) {
		t.Error("registered a CA bundle other than the provided ca.crt")
	}
	before := servedCert(t, hook.srv)
	issue()
	e2e.WaitFor(t, "the renewed pair on the wire", time.Minute, func(context.Context) (bool, error) {
		return !servedCert(t, hook.srv).Equal(before), nil
	})
	waitMutating(t, client, ns)
}

func testPod(scheduler string, labels, annotations map[string]string, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "wh-", Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			Containers: []corev1.Container{
				{Name: "train", Image: "pytorch", Resources: corev1.ResourceRequirements{Limits: limits}},
				{Name: "debug", Image: "cuda", Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}},
			},
		},
	}
}

// waitMutating waits until the API server calls the registered webhook:
// registration reaches the API server's own cache a moment after the write.
func waitMutating(t *testing.T, client kubernetes.Interface, ns string) {
	e2e.WaitFor(t, "webhook in effect", time.Minute, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(ns).Create(ctx, testPod("sluice", nil, nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return pod.Labels["sluice.dev/queue"] != "", nil
	})
}

func TestWebhookOnRig(t *testing.T) {
	c := e2e.Rig(t)
	client := c.Client()
	ctx := context.Background()
	secret := certSecret(t, c)
	hook := startWebhook(t, c, secret)
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, DefaultConfigurationName, metav1.DeleteOptions{})
	})
	plain := e2e.Namespace(t, c)
	waitMutating(t, client, plain)
	checkHealthz(t, hook.srv)
	// A namespace labelled just before its first pod: the informer may not
	// have it yet, and the pod must still get its queue.
	nlp := e2e.Namespace(t, c)
	if _, err := client.CoreV1().Namespaces().Patch(ctx, nlp, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"sluice.dev/queue":"nlp"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	const (
		devices    = "metadata.annotations['sluice.dev/visible-devices']"
		portion    = "metadata.annotations['sluice.dev/gpu-portion']"
		mpsThreads = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE<-metadata.annotations['sluice.dev/mps-active-thread-percentage']"
		mpsMemory  = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT<-metadata.annotations['sluice.dev/mps-pinned-device-mem-limit']"
	)

	admitted := []struct {
		name      string
		namespace string
		pod       *corev1.Pod
		wantQueue string
		wantEnv   map[string][]string // container -> env as NAME=value or NAME<-fieldPath
	}{
		{name: "fraction in a plain namespace", namespace: plain,
			pod:       testPod("sluice", nil, map[string]string{"gpu-fraction": "0.25"}, nil),
			wantQueue: "default",
			wantEnv: map[string][]string{
				"train": {"NVIDIA_VISIBLE_DEVICES<-" + devices, "SLUICE_GPU_PORTION<-" + portion, mpsThreads, mpsMemory},
				"debug": {"NVIDIA_VISIBLE_DEVICES=all", "SLUICE_GPU_PORTION<-" + portion, mpsThreads, mpsMemory},
			}},
		{name: "whole GPU, queue from the namespace", namespace: nlp,
			pod: testPod("sluice", nil, nil, gpu), wantQueue: "nlp",
			wantEnv: map[string][]string{"train": nil}}, // the device plugin sets its devices
		{name: "KAI queue label, no GPUs", namespace: nlp,
			pod: testPod("sluice", map[string]string{"kai.scheduler/queue": "vision"}, nil, nil), wantQueue: "vision",
			wantEnv: map[string][]string{"train": nil}},
		{name: "other scheduler untouched despite a bad fraction", namespace: plain,
			pod:     testPod("default-scheduler", nil, map[string]string{"gpu-fraction": "1.5"}, gpu),
			wantEnv: map[string][]string{"train": nil, "debug": {"NVIDIA_VISIBLE_DEVICES=all"}}},
	}
	var fractional *corev1.Pod
	for _, tt := range admitted {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := client.CoreV1().Pods(tt.namespace).Create(ctx, tt.pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Labels["sluice.dev/queue"]; got != tt.wantQueue {
				t.Errorf("queue label %q, want %q", got, tt.wantQueue)
			}
			for _, ct := range pod.Spec.Containers {
				if want, ok := tt.wantEnv[ct.Name]; ok && strings.Join(envOf(ct), " ") != strings.Join(want, " ") {
					t.Errorf("container %s env %q, want %q", ct.Name, envOf(ct), want)
				}
			}
			if fractional == nil {
				fractional = pod
			}
		})
	}

	t.Run("binding annotations reach the pod", func(t *testing.T) {
		if fractional == nil {
			t.Fatal("no admitted pod to bind")
		}
		// What the scheduler does at bind time: the API server copies the
		// Binding's annotations onto the pod, where the env above reads them.
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: fractional.Name, Annotations: map[string]string{
				v1alpha1.VisibleDevicesAnnotation: "GPU-5f0a4e6c-0000-4000-8000-000000000001", v1alpha1.GPUPortionAnnotation: "0.25",
			}},
			Target: corev1.ObjectReference{Kind: "Node", Name: cluster.NodeName("h100", 0)},
		}
		if err := client.CoreV1().Pods(plain).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := client.CoreV1().Pods(plain).Get(ctx, fractional.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName == "" || pod.Annotations[v1alpha1.VisibleDevicesAnnotation] != binding.Annotations[v1alpha1.VisibleDevicesAnnotation] ||
			pod.Annotations[v1alpha1.GPUPortionAnnotation] != "0.25" {
			t.Fatalf("bound to %q with annotations %v", pod.Spec.NodeName, pod.Annotations)
		}
	})

	refused := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{name: "fraction out of range", pod: testPod("sluice", nil, map[string]string{"gpu-fraction": "1.5"}, nil),
			want: []string{`admission webhook "pod-admission.sluice.dev" denied the request`, `gpu-fraction="1.5"`, "(0,1)"}},
		{name: "fraction with whole GPUs", pod: testPod("sluice", nil, map[string]string{"gpu-fraction": "0.5"}, gpu),
			want: []string{`container "train" also requests nvidia.com/gpu`}},
	}
	// Sluice allocates Dynamic Resource Allocation claims (k8sscheduler/scheduler/dra*.go):
	// a pod with one is admitted as Sluice's.
	t.Run("resource claims (DRA) admitted", func(t *testing.T) {
		created, err := client.CoreV1().Pods(plain).Create(ctx, withClaim(testPod("sluice", nil, nil, nil)), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a pod with a resource claim was refused: %v", err)
		}
		if created.Spec.SchedulerName != v1alpha1.DefaultSchedulerName {
			t.Errorf("schedulerName = %q, want %q", created.Spec.SchedulerName, v1alpha1.DefaultSchedulerName)
		}
	})
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.CoreV1().Pods(plain).Create(ctx, tt.pod, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v, want 422 Invalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}

	t.Run("a serving certificate the rotator finds bad is replaced while serving", func(t *testing.T) {
		before := servedCert(t, hook.srv)
		sec, err := client.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(sec.Data, certFile)
		delete(sec.Data, keyFile)
		if _, err := client.CoreV1().Secrets(secret.Namespace).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The rotator sees the Secret change and signs a new certificate with the same CA;
		// the server copies it and controller-runtime's certificate watcher serves it.
		e2e.WaitFor(t, "a new serving certificate on the wire", time.Minute, func(context.Context) (bool, error) {
			return !servedCert(t, hook.srv).Equal(before), nil
		})
		checkHealthz(t, hook.srv)
		waitMutating(t, client, plain)
	})

	t.Run("webhook down", func(t *testing.T) {
		hook.shutdown()
		_, err := client.CoreV1().Pods(plain).Create(ctx, testPod("sluice", nil, nil, nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "pod-admission.sluice.dev"`) {
			t.Fatalf("sluice pod with the webhook down: err = %v, want a refusal naming the webhook", err)
		}
		pod, err := client.CoreV1().Pods(plain).Create(ctx, testPod("default-scheduler", nil, nil, nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("other pods must not depend on the webhook: %v", err)
		}
		if _, ok := pod.Labels["sluice.dev/queue"]; ok {
			t.Errorf("non-sluice pod got labels %v", pod.Labels)
		}
	})

	t.Run("restart reuses the CA and re-registers", func(t *testing.T) {
		again := startWebhook(t, c, secret)
		if !bytes.Equal(again.srv.CABundle(), hook.srv.CABundle()) {
			t.Error("a restart with the same Secret made a new CA")
		}
		if again.srv.URL() == hook.srv.URL() {
			t.Fatalf("both servers on %s: the update path is not exercised", again.srv.URL())
		}
		waitMutating(t, client, plain)
		cfg, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, DefaultConfigurationName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *cfg.Webhooks[0].ClientConfig.URL; got != again.srv.URL() {
			t.Errorf("registered URL %s, want the new server's %s", got, again.srv.URL())
		}
	})
}

// withClaim gives a pod one Dynamic Resource Allocation claim, from a template, used by
// its first container.
func withClaim(pod *corev1.Pod) *corev1.Pod {
	tmpl := "one-gpu"
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return pod
}
