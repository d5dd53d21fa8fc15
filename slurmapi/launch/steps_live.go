package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// A running job's steps, as its batch host keeps them (RUNNING ones
// with their start, ended ones with their end and exit): the Sluice
// server asks for them to show a running job's steps (job/{id} in
// slurmdb, sacct -j), which the ledger has only once the job has ended.

// stepsRequest asks the batch host for the job's steps.
type stepsRequest struct {
	Nonce string `json:"nonce"`
}

// listSteps answers pathSteps on the batch host.
func (s *server) listSteps(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.body(w, r); !ok {
		return
	}
	if s.job.Node != 0 {
		http.Error(w, "launcher: steps are kept by the batch host (node 0)", http.StatusMisdirectedRequest)
		return
	}
	steps, err := recordedSteps(s.job)
	if err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(steps)
}

// RunningSteps asks the launcher at addr (a job's batch host) for the
// job's steps so far; the request is signed with the job's key. Only
// steps of job jobID are returned, whatever the answer holds.
func RunningSteps(ctx context.Context, addr string, key []byte, jobID int64) ([]accounting.Step, error) {
	body, err := json.Marshal(stepsRequest{Nonce: nonce()})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+pathSteps, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req, key, body, time.Now())
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("launcher %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("launcher %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(msg)))
	}
	var steps []accounting.Step
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&steps); err != nil {
		return nil, fmt.Errorf("launcher %s: %w", addr, err)
	}
	out := steps[:0]
	for _, st := range steps {
		// The job's own report about its own steps, trusted as far as
		// that (docs/security.md): never another job's.
		if st.JobID == jobID && st.Validate() == nil {
			out = append(out, st)
		}
	}
	return out, nil
}
