package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/test/e2e"
)

// BenchmarkAdmitGPUPod measures the handler's cost for one pod creation (a
// fractional GPU pod with two containers, queue from the namespace), without
// the network: this is the CPU the webhook adds to every Sluice pod.
func BenchmarkAdmitGPUPod(b *testing.B) {
	srv := newTestServer(b, nil)
	handler := srv.Config.Handler
	pod := podSpec{annotations: map[string]string{"gpu-fraction": "0.25"}, containers: []corev1.Container{
		{Name: "train", Image: "pytorch"}, {Name: "sidecar", Image: "busybox"},
	}}.pod("nlp-team")
	body := reviewFor(b, pod, admissionv1.Create)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkAdmitJobPod measures admitting one pod of a Job on the rig, naming its
// PodGroup from the Job: "read per pod" is the webhook without the owner memo (every
// pod GETs the Job from the API server), "remembered" with it (the first pod reads,
// the rest are served from the memo). gets/op is the API reads per pod.
func BenchmarkAdmitJobPod(b *testing.B) {
	c := e2e.Rig(b)
	ns, err := c.Client().CoreV1().Namespaces().Get(context.Background(), e2e.Namespace(b, c), metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cachedNamespace := func(context.Context, string) (*corev1.Namespace, error) { return ns, nil } // as the informer serves it
	job := createJob(b, c, ns.Name, "bench")
	body := reviewFor(b, jobPod(job), admissionv1.Create)
	for _, mode := range []struct {
		name string
		ttl  time.Duration
	}{{"read per pod", 0}, {"remembered", ownerMemoTTL}} {
		b.Run(mode.name, func(b *testing.B) {
			counted := newCountingReader(b, c)
			adm := testAdmitter(b, cachedNamespace)
			adm.owners = newOwnerMemo(counted)
			adm.owners.ttl = mode.ttl // 0: every entry has expired when it is looked up
			var rec *httptest.ResponseRecorder
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec = httptest.NewRecorder()
				adm.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
				b.Fatal(err)
			}
			if group := "bench-" + string(job.UID)[:8]; review.Response == nil || !strings.Contains(string(review.Response.Patch), group) {
				b.Fatalf("the pod was not named group %s: %s", group, rec.Body)
			}
			b.ReportMetric(float64(counted.count("Job", job.Name))/float64(b.N), "gets/op")
		})
	}
}
