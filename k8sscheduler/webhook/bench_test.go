package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
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
