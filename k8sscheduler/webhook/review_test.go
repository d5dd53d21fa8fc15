package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// reviewJSON is a v1 AdmissionReview creating a pod, with request fields
// replaced by the test's raw JSON.
func reviewJSON(request string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + request + `}`
}

const goodPod = `{"metadata":{"name":"p","namespace":"plain"},"spec":{"schedulerName":"sluice","containers":[{"name":"c","image":"x"}]}}`

func TestServeHTTPOddInput(t *testing.T) {
	srv := newTestServer(t, nil)
	tests := []struct {
		name        string
		method      string // default POST
		contentType string // default application/json
		body        string
		wantStatus  int
		// For a 200: whether the pod is allowed, and a substring of the
		// denial message.
		wantAllowed bool
		wantMessage string
	}{
		{name: "GET", method: http.MethodGet, wantStatus: http.StatusMethodNotAllowed},
		{name: "not JSON content type", contentType: "text/plain", body: reviewJSON(`{}`), wantStatus: http.StatusUnsupportedMediaType},
		{name: "empty body", body: "", wantStatus: http.StatusBadRequest},
		{name: "truncated JSON", body: `{"apiVersion":`, wantStatus: http.StatusBadRequest},
		{name: "null", body: `null`, wantStatus: http.StatusBadRequest},
		{name: "array", body: `[]`, wantStatus: http.StatusBadRequest},
		{name: "string", body: `"review"`, wantStatus: http.StatusBadRequest},
		{name: "wrong types", body: `{"apiVersion":1,"kind":[]}`, wantStatus: http.StatusBadRequest},
		{name: "v1beta1 review", body: `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}`, wantStatus: http.StatusBadRequest},
		{name: "not a review", body: `{"apiVersion":"v1","kind":"Pod"}`, wantStatus: http.StatusBadRequest},
		{name: "no request", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantStatus: http.StatusBadRequest},
		{name: "request null", body: reviewJSON(`null`), wantStatus: http.StatusBadRequest},
		{name: "too large", body: reviewJSON(`{"uid":"u","name":"` + strings.Repeat("x", maxReviewBytes) + `"}`), wantStatus: http.StatusRequestEntityTooLarge},
		{name: "create without object", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE"}`),
			wantStatus: http.StatusOK, wantMessage: "carries no pod"},
		{name: "object is a number", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":5}`),
			wantStatus: http.StatusOK, wantMessage: "cannot decode the pod"},
		{name: "spec of the wrong type", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"spec":"gpu"}}`),
			wantStatus: http.StatusOK, wantMessage: "cannot decode the pod"},
		{name: "annotations of the wrong type", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":{"metadata":{"annotations":{"gpu-fraction":0.5}}}}`),
			wantStatus: http.StatusOK, wantMessage: "cannot decode the pod"},
		{name: "not a pod", body: reviewJSON(`{"uid":"u","kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"CREATE","object":{"spec":5}}`),
			wantStatus: http.StatusOK, wantAllowed: true},
		{name: "binding subresource", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"subResource":"binding","operation":"CREATE","object":{}}`),
			wantStatus: http.StatusOK, wantAllowed: true},
		{name: "delete", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"DELETE","oldObject":` + goodPod + `}`),
			wantStatus: http.StatusOK, wantAllowed: true},
		{name: "unknown fields are ignored", body: reviewJSON(`{"uid":"u","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","future":true,"object":` + goodPod + `}`),
			wantStatus: http.StatusOK, wantAllowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, ct := tt.method, tt.contentType
			if method == "" {
				method = http.MethodPost
			}
			if ct == "" {
				ct = "application/json"
			}
			req, err := http.NewRequest(method, srv.URL, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", ct)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.wantStatus)
			}
			if tt.wantStatus != http.StatusOK {
				if len(bytes.TrimSpace(body)) == 0 {
					t.Error("an error status without an explanation")
				}
				return
			}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &review); err != nil || review.Response == nil {
				t.Fatalf("not an AdmissionReview response: %v %s", err, body)
			}
			r := review.Response
			if r.UID != "u" {
				t.Errorf("uid %q, want the request's", r.UID)
			}
			if r.Allowed != tt.wantAllowed {
				t.Errorf("allowed = %v, want %v (%s)", r.Allowed, tt.wantAllowed, body)
			}
			if tt.wantMessage != "" && (r.Result == nil || !strings.Contains(r.Result.Message, tt.wantMessage) || r.Result.Code != http.StatusBadRequest) {
				t.Errorf("result %+v, want a 400 saying %q", r.Result, tt.wantMessage)
			}
		})
	}
}

// FuzzServeHTTP feeds arbitrary bodies to the handler: it must never panic,
// and must answer either an error status or a well-formed review response.
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []string{
		"", "{", "null", reviewJSON(`{}`), reviewJSON(`{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","object":` + goodPod + `}`),
		reviewJSON(`{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","object":{"metadata":{"annotations":{"gpu-fraction":"0.5"}},"spec":{"schedulerName":"sluice","containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}`),
	} {
		f.Add([]byte(seed))
	}
	srv := newTestServer(f, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		switch resp.StatusCode {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		case http.StatusOK:
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(data, &review); err != nil || review.Response == nil {
				t.Fatalf("200 without a review response: %s", data)
			}
		default:
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
	})
}
