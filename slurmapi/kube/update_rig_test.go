package kube

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestUpdatePriorityAndUnlimitedOnRig: an operator's priority and
// UNLIMITED time limit are stored and shown; a plain user may set neither.
func TestUpdatePriorityAndUnlimitedOnRig(t *testing.T) {
	ts, _ := rigServer(t)
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", gpuJob)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	path := fmt.Sprintf("/slurm/v0.0.44/job/%d", int(doc["job_id"].(float64)))
	t.Cleanup(func() { call(t, ts, "alice", "DELETE", path, "") })
	// The job's priority is its QOS's until an operator adds to it.
	_, doc = call(t, ts, "alice", "GET", path, "")
	base := doc["jobs"].([]any)[0].(map[string]any)["priority"].(map[string]any)["number"].(float64)
	cases := []struct {
		name, user, body string
		status           int
		field            string
		want             map[string]any
	}{
		{"user sets priority", "alice", `{"priority":{"set":true,"number":500}}`, http.StatusForbidden, "", nil},
		{"operator sets priority", "slurm", `{"priority":{"set":true,"number":500}}`, http.StatusOK, "priority", map[string]any{"set": true, "infinite": false, "number": base + 500}},
		{"operator lifts the time limit", "slurm", `{"time_limit":{"set":true,"infinite":true}}`, http.StatusOK, "time_limit", map[string]any{"set": true, "infinite": true, "number": 0.0}},
	}
	for _, c := range cases {
		if status, doc := call(t, ts, c.user, "POST", path, c.body); status != c.status {
			t.Errorf("%s: %d %v, want %d", c.name, status, doc, c.status)
			continue
		}
		if c.field == "" {
			continue
		}
		_, doc := call(t, ts, "alice", "GET", path, "")
		got := doc["jobs"].([]any)[0].(map[string]any)[c.field]
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %s is %v, want %v", c.name, c.field, got, c.want)
		}
	}
}

// TestUpdatePendingJobOnRig: while a job is pending, POST job/{id}
// changes its partition, QOS and dependency as scontrol update does,
// checked for its owner as at submission; the account and fields no
// update acts on are refused with Slurm's error, never answered 200 with
// nothing changed.
func TestUpdatePendingJobOnRig(t *testing.T) {
	ts, _ := rigServer(t)
	job := `{"script":"#!/bin/sh\n#SBATCH -t 30\nhostname\n","job":{"environment":["PATH=/bin"],"mail_type":["END"]}}`
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", job)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	if ws := fmt.Sprint(doc["warnings"]); !strings.Contains(ws, "job.mail_type: ignored: no mail is sent") {
		t.Errorf("submit warnings %s, want one for mail_type", ws)
	}
	path := fmt.Sprintf("/slurm/v0.0.44/job/%d", int(doc["job_id"].(float64)))
	t.Cleanup(func() { call(t, ts, "alice", "DELETE", path, "") })
	// A job to depend on: a dependency must name a job that exists.
	status, doc = call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", `{"script":"#!/bin/sh\n#SBATCH -H\nhostname\n","job":{"environment":["PATH=/bin"]}}`)
	if status != http.StatusOK {
		t.Fatalf("submit the job to depend on: %d %v", status, doc)
	}
	depID := int(doc["job_id"].(float64))
	dep := fmt.Sprintf("afterok:%d", depID)
	t.Cleanup(func() { call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.44/job/%d", depID), "") })
	cases := []struct {
		name, body string
		status     int
		errno      int
		field      string
		want       any
	}{
		{"another partition", `{"partition":"a100"}`, http.StatusOK, 0, "partition", "a100"},
		{"a partition list", `{"partition":"h100,a100"}`, http.StatusOK, 0, "partition", "h100,a100"},
		{"a list naming an unknown partition", `{"partition":"h100,v100"}`, http.StatusBadRequest, slurmapi.ErrInvalidPartition, "partition", "h100,a100"},
		{"one partition again", `{"partition":"a100"}`, http.StatusOK, 0, "partition", "a100"},
		{"a QOS of the association", `{"qos":"normal"}`, http.StatusOK, 0, "qos", "normal"},
		{"a QOS outside the association", `{"qos":"high"}`, http.StatusBadRequest, slurmapi.ErrInvalidQOS, "qos", "normal"},
		{"an unknown partition", `{"partition":"v100"}`, http.StatusBadRequest, slurmapi.ErrInvalidPartition, "partition", "a100"},
		{"a dependency", `{"dependency":"` + dep + `"}`, http.StatusOK, 0, "dependency", dep},
		{"a malformed dependency", `{"dependency":"sometimes:1"}`, http.StatusBadRequest, slurmapi.ErrDependency, "dependency", dep},
		{"a dependency on a job that does not exist", `{"dependency":"afterok:4000000000"}`, http.StatusBadRequest, slurmapi.ErrDependency, "dependency", dep},
		{"the dependency cleared", `{"dependency":""}`, http.StatusOK, 0, "dependency", ""},
		{"another account", `{"account":"vision"}`, http.StatusBadRequest, slurmapi.ErrInvalidAccount, "account", "nlp"},
		{"a field no update acts on", `{"mail_type":["END"]}`, http.StatusBadRequest, slurmapi.ErrNotSupported, "", nil},
		// requeue:false was once taken for an empty field: 200, nothing changed.
		{"requeue off", `{"requeue":false}`, http.StatusOK, 0, "requeue", false},
		{"requeue on again", `{"requeue":true}`, http.StatusOK, 0, "requeue", true},
	}
	for _, c := range cases {
		status, doc := call(t, ts, "alice", "POST", path, c.body)
		if status != c.status {
			t.Errorf("%s: %d %v, want %d", c.name, status, doc, c.status)
			continue
		}
		if c.errno != 0 {
			if got := doc["errors"].([]any)[0].(map[string]any)["error_number"]; got != float64(c.errno) {
				t.Errorf("%s: error %v, want %d", c.name, got, c.errno)
			}
		}
		if c.field == "" {
			continue
		}
		_, doc = call(t, ts, "alice", "GET", path, "")
		if got := doc["jobs"].([]any)[0].(map[string]any)[c.field]; got != c.want {
			t.Errorf("%s: %s is %v, want %v", c.name, c.field, got, c.want)
		}
	}
	// Slurm's JobRequeue=1: a plain batch job may be requeued.
	_, doc = call(t, ts, "alice", "GET", path, "")
	if got := doc["jobs"].([]any)[0].(map[string]any)["requeue"]; got != true {
		t.Errorf("requeue %v, want true by default", got)
	}
}
