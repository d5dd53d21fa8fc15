package servermem

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRefusalsLogWhatWasAnswered429: a request the API server answers 429 is logged with
// its method, path and Retry-After; one answered otherwise is not.
func TestRefusalsLogWhatWasAnswered429(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "podgroups") {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	refusals = refusalLog{}
	t.Cleanup(func() { refusals = refusalLog{} })
	client := &http.Client{Transport: WrapRefusals(http.DefaultTransport)}
	for _, path := range []string{"/apis/scheduling.sluice.dev/v1alpha1/podgroups?watch=true", "/api/v1/pods"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var out strings.Builder
	refusals.write(&out)
	got := out.String()
	if !strings.Contains(got, `GET /apis/scheduling.sluice.dev/v1alpha1/podgroups?watch=true Retry-After="1"`) {
		t.Errorf("the refused watch is not logged:\n%s", got)
	}
	if strings.Contains(got, "/api/v1/pods") {
		t.Errorf("a request answered 200 is logged as refused:\n%s", got)
	}
}
