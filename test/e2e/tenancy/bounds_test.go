package tenancy

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// TestSubmitBoundsRefusedWithNothingStored: each oversize or malformed
// submission from the issue is refused with a 400 and Slurm's error, and
// none of them stores a job or consumes a job id: the job alice submits
// after them has the id right after the one she submitted before.
func TestSubmitBoundsRefusedWithNothingStored(t *testing.T) {
	s := siteFor(t)
	huge := "#!/bin/bash\n" + strings.Repeat("echo overflow\n", slurmapi.MaxScriptBytes/14+1)
	cases := []struct {
		name   string
		body   map[string]any
		number int
	}{
		{"300-character name", jobBody(map[string]any{"name": strings.Repeat("n", 300)}), slurmapi.ErrRestInvalidJobs},
		{"nodes 1048576", jobBody(map[string]any{"nodes": "1048576"}), slurmapi.ErrInvalidNodeCount},
		{"more GPUs per node than any node has", jobBody(map[string]any{"tres_per_node": "gres/gpu:9"}), slurmapi.ErrNodeConfigUnavailable},
		{"more CPUs per node than any node has", jobBody(map[string]any{"cpus_per_task": 100000}), slurmapi.ErrNodeConfigUnavailable},
		{"more memory per node than any node has", jobBody(map[string]any{"memory_per_node": 1 << 30}), slurmapi.ErrNodeConfigUnavailable},
		{"empty environment name", jobBody(map[string]any{"environment": map[string]string{"": "x"}}), slurmapi.ErrRestInvalidJobs},
		{"time_limit that overflows", jobBody(map[string]any{"time_limit": map[string]any{"set": true, "number": 153722868}}), slurmapi.ErrInvalidTimeLimit},
		{"oversize script", map[string]any{"script": huge, "job": jobBody(nil)["job"]}, slurmapi.ErrScriptMissing},
		{"array above MaxArraySize", jobBody(map[string]any{"array": "0-1001"}), slurmapi.ErrInvalidArray},
		{"output path past PATH_MAX", jobBody(map[string]any{"standard_output": "/" + strings.Repeat("p", 4096)}), slurmapi.ErrPathnameTooLong},
		{"comment past the schema", jobBody(map[string]any{"comment": strings.Repeat("c", 1025)}), slurmapi.ErrRestInvalidJobs},
		{"image past the schema", jobBody(map[string]any{"container_image": strings.Repeat("i", 513)}), slurmapi.ErrRestInvalidJobs},
		{"dependency on a job that does not exist", jobBody(map[string]any{"dependency": "afterok:4000000000"}), slurmapi.ErrDependency},
	}
	before := jobID(t, s.submitOK(t, alice, nil))
	stored := len(s.jobsAs(t, operatorUser))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, alice, http.MethodPost, api+"/job/submit", tc.body, nil)
			e := r.requireRefused(t, http.StatusBadRequest, tc.number)
			if e.Source == "" {
				t.Errorf("the refusal names no field: %s", r)
			}
		})
	}
	if n := len(s.jobsAs(t, operatorUser)); n != stored {
		t.Errorf("the refused submissions changed the job count from %d to %d", stored, n)
	}
	if after := jobID(t, s.submitOK(t, alice, nil)); after != before+1 {
		t.Errorf("job ids %d then %d: the refused submissions consumed %d ids", before, after, after-before-1)
	}
}

// TestJobUpdateBounds: the same bounds hold for POST job/{id}, and a
// refused update leaves the job as it was.
func TestJobUpdateBounds(t *testing.T) {
	s := siteFor(t)
	id := s.submitOK(t, alice, nil)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		number int
	}{
		{"300-character name", map[string]any{"name": strings.Repeat("n", 300)}, slurmapi.ErrRestInvalidJobs},
		{"time_limit that overflows", map[string]any{"time_limit": map[string]any{"set": true, "number": 153722868}}, slurmapi.ErrInvalidTimeLimit},
	} {
		r := s.do(t, alice, http.MethodPost, api+"/job/"+id, tc.body, nil)
		r.requireRefused(t, http.StatusBadRequest, tc.number)
	}
	if j := s.job(t, id); j["name"] != "tenancy" {
		t.Errorf("job %s after refused updates: name %v", id, j["name"])
	}
}

// jobsAs lists the jobs user sees (squeue).
func (s *site) jobsAs(t *testing.T, user string) []map[string]any {
	t.Helper()
	r := s.get(t, user, api+"/jobs")
	r.requireOK(t)
	var out []map[string]any
	for _, j := range r.doc["jobs"].([]any) {
		out = append(out, j.(map[string]any))
	}
	return out
}

func jobID(t *testing.T, id string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMaxSubmitJobs: with the association limit of bob's account set just
// above what he has, bob's submissions are taken up to it and then refused
// with Slurm's accounting-policy error, and bob never holds more jobs in
// the account than the limit allows.
func TestMaxSubmitJobs(t *testing.T) {
	s := siteFor(t)
	ctx := context.Background()
	var q v1alpha1.Queue
	if err := s.crs.Get(ctx, client.ObjectKey{Name: "vision"}, &q); err != nil {
		t.Fatal(err)
	}
	if q.Spec.MaxSubmitJobs == nil {
		t.Fatal("the seeded site sets no maxSubmitJobs on vision")
	}
	seeded := *q.Spec.MaxSubmitJobs
	limit := int32(s.activeJobs(t, bob, "vision") + 3)
	s.setVisionLimit(t, limit)
	t.Cleanup(func() {
		s.setVisionLimit(t, seeded)
		time.Sleep(2 * time.Second) // so the next test meets the seeded limit, not this one
	})
	time.Sleep(2 * time.Second) // the server's catalogue is at most a second old

	refused := false
	for i := 0; i < int(limit)+5 && !refused; i++ {
		r := s.submit(t, bob, map[string]any{"hold": true})
		switch r.status {
		case http.StatusOK:
			id := strconv.FormatUint(uint64(r.doc["job_id"].(float64)), 10)
			t.Cleanup(func() { s.del(t, operatorUser, api+"/job/"+id) })
		default:
			before := s.activeJobs(t, bob, "vision")
			e := r.requireRefused(t, http.StatusBadRequest, slurmapi.ErrAccountingPolicy)
			if !strings.Contains(e.Description, "MaxSubmitJobs") {
				t.Errorf("refusal does not name the limit: %s", r)
			}
			if after := s.activeJobs(t, bob, "vision"); after != before {
				t.Errorf("the refused submission changed bob's jobs from %d to %d", before, after)
			}
			refused = true
		}
	}
	if !refused {
		t.Fatalf("bob was never refused at maxSubmitJobs %d", limit)
	}
	if n := s.activeJobs(t, bob, "vision"); n > int(limit) {
		t.Errorf("bob holds %d jobs in vision, over maxSubmitJobs %d", n, limit)
	}
}

func (s *site) setVisionLimit(t *testing.T, limit int32) {
	t.Helper()
	ctx := context.Background()
	var q v1alpha1.Queue
	if err := s.crs.Get(ctx, client.ObjectKey{Name: "vision"}, &q); err != nil {
		t.Fatal(err)
	}
	q.Spec.MaxSubmitJobs = &limit
	if err := s.crs.Update(ctx, &q); err != nil {
		t.Fatal(err)
	}
}

// activeJobs counts user's jobs in account that have not ended.
func (s *site) activeJobs(t *testing.T, user, account string) int {
	t.Helper()
	n := 0
	for _, j := range s.jobsAs(t, operatorUser) {
		state, _ := j["job_state"].([]any)
		if j["user_name"] == user && j["account"] == account && len(state) > 0 && (state[0] == "PENDING" || state[0] == "RUNNING") {
			n++
		}
	}
	return n
}
