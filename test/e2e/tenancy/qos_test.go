package tenancy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestQOSOutsideTheAssociationIsRefused: alice's association gives her
// normal and preemptible, not high; an account without users takes no
// jobs. Neither refusal stores anything.
func TestQOSOutsideTheAssociationIsRefused(t *testing.T) {
	s := siteFor(t)
	name := uniqueName("qos")
	e := s.submit(t, alice, map[string]any{"name": name, "qos": "high"}).requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidQOS)
	if e.Error != "Invalid qos specification" {
		t.Errorf("error %q, want Slurm's Invalid qos specification", e.Error)
	}
	s.submit(t, alice, map[string]any{"name": name, "account": "default"}).requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidAccount)
	s.submit(t, "mallory", map[string]any{"name": name, "account": "default"}).requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidAccount)
	s.requireNoJobNamed(t, name)
	s.submitOK(t, alice, map[string]any{"qos": "preemptible"})
}

// TestDefaultQOSIsShown: a job naming no QOS gets its association's
// default (preemptible for nlp), and squeue, scontrol show job and sacct
// all show it.
func TestDefaultQOSIsShown(t *testing.T) {
	s := siteFor(t)
	id := s.submitOK(t, alice, nil)
	if q := s.job(t, id)["qos"]; q != "preemptible" {
		t.Errorf("scontrol show job %s: qos %v, want preemptible", id, q)
	}
	for _, j := range s.jobs(t, alice) {
		if formatID(j["job_id"].(float64)) == id && j["qos"] != "preemptible" {
			t.Errorf("squeue: job %s qos %v, want preemptible", id, j["qos"])
		}
	}
	if q := s.waitAccounted(t, id)["qos"]; q != "preemptible" {
		t.Errorf("sacct: job %s qos %v, want preemptible", id, q)
	}
}

// TestAssociationQOSWrittenThroughSlurmdbIsKept: an admin gives account
// vision the QOS high through slurmdb; GET associations reads it back and
// bob may then use it. A user's association may not differ from its
// account's QOS.
func TestAssociationQOSWrittenThroughSlurmdbIsKept(t *testing.T) {
	s := siteFor(t)
	const path = "/slurmdb/v0.0.45/associations"
	write := func(qos []string, def string) *response {
		return s.do(t, adminUser, http.MethodPost, path, map[string]any{"associations": []any{map[string]any{
			"account": "vision", "qos": qos, "default": map[string]any{"qos": def}}}}, nil)
	}
	write([]string{"normal", "preemptible", "high"}, "normal").requireOK(t)
	t.Cleanup(func() { write([]string{"normal", "preemptible"}, "preemptible") }) // as examples/site.yaml has it

	r := s.get(t, adminUser, path+"?account=vision")
	r.requireOK(t)
	for _, a := range r.doc["associations"].([]any) {
		a := a.(map[string]any)
		qos := a["qos"].([]any)
		if !slices.Contains(qos, any("high")) || len(qos) != 3 || a["default"].(map[string]any)["qos"] != "normal" {
			t.Errorf("association %v/%v reads back qos %v default %v, want normal, preemptible, high and default normal", a["account"], a["user"], qos, a["default"])
		}
	}
	e2e.WaitFor(t, "bob may submit with QOS high", time.Minute, func(context.Context) (bool, error) {
		sub := s.submit(t, bob, map[string]any{"qos": "high"})
		if sub.status == http.StatusOK {
			id := formatID(sub.doc["job_id"].(float64))
			t.Cleanup(func() { s.del(t, operatorUser, api+"/job/"+id) })
		}
		return sub.status == http.StatusOK, fmt.Errorf("%s", sub)
	})
	s.submit(t, alice, map[string]any{"qos": "high"}).requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidQOS)

	s.do(t, adminUser, http.MethodPost, path, map[string]any{"associations": []any{map[string]any{
		"account": "nlp", "user": alice, "qos": []string{"normal", "high"}}}}, nil).requireRefused(t, http.StatusBadRequest, slurmapi.ErrNotSupported)
	s.do(t, alice, http.MethodPost, path, map[string]any{"associations": []any{map[string]any{
		"account": "nlp", "qos": []string{"normal", "high"}}}}, nil).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
	s.submit(t, alice, map[string]any{"qos": "high"}).requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidQOS)
}
