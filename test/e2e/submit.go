package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Submit posts a job submission (a slurmrestd v0.0.44 job/submit body) to a Sluice
// server's REST API at addr with the user's token and returns the job's id, failing the
// test on any other answer.
func Submit(t testing.TB, addr, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/slurm/v0.0.44/job/submit", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-SLURM-USER-TOKEN", token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc struct {
		JobID int `json:"job_id"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &doc) != nil || doc.JobID == 0 {
		t.Fatalf("submit to %s: %d %s", addr, resp.StatusCode, raw)
	}
	return doc.JobID
}
