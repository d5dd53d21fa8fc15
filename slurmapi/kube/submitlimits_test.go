package kube

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// TestMaxSubmitJobs: a user's jobs not ended count against the account's
// and the QOS's limit (array tasks each), others' jobs and ended ones do
// not, a refused or failed submission takes nothing.
func TestMaxSubmitJobs(t *testing.T) {
	job := func(user, queue, qos string, phase v1alpha1.PodGroupPhase) v1alpha1.PodGroup {
		return v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{Queue: queue, QOS: qos, Slurm: &v1alpha1.SlurmJob{User: user}}, Status: v1alpha1.PodGroupStatus{Phase: phase}}
	}
	array := job("bob", "vision", "normal", "")
	array.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{ArrayPendingAnnotation: "3-5"}}
	array.Spec.Slurm.Array = "0-5"
	stored := []v1alpha1.PodGroup{
		job("bob", "vision", "normal", v1alpha1.PodGroupRunning), job("bob", "vision", "high", ""),
		job("bob", "vision", "normal", v1alpha1.PodGroupSucceeded), job("alice", "vision", "normal", ""), array,
	}
	cat := &slurmapi.Catalog{
		Accounts: map[string]*slurmapi.Account{"vision": {Name: "vision", MaxSubmitJobs: 7}, "nlp": {Name: "nlp"}},
		QOS:      map[string]*slurmapi.QOS{"normal": {Name: "normal"}, "high": {Name: "high", MaxSubmitJobsPerUser: 2}},
	}
	lists := 0
	s := &submitCounts{list: func(context.Context) ([]v1alpha1.PodGroup, error) { lists++; return stored, nil }}
	ctx := context.Background()
	steps := []struct {
		name    string
		d       slurmapi.JobDesc
		ok      bool
		release bool
	}{
		{"bob has 5 in vision (2 jobs and 3 array tasks), one more fits", slurmapi.JobDesc{User: "bob", Account: "vision", QOS: "normal"}, true, false},
		{"an array of 2 tasks would make 8", slurmapi.JobDesc{User: "bob", Account: "vision", QOS: "normal", Array: "0-1"}, false, false},
		{"a submission that then fails gives its slot back", slurmapi.JobDesc{User: "bob", Account: "vision", QOS: "normal"}, true, true},
		{"so the slot is there again", slurmapi.JobDesc{User: "bob", Account: "vision", QOS: "normal"}, true, false},
		{"now vision is full for bob", slurmapi.JobDesc{User: "bob", Account: "vision", QOS: "normal"}, false, false},
		{"alice's count in vision is her own", slurmapi.JobDesc{User: "alice", Account: "vision", QOS: "high"}, true, false},
		{"QOS high allows alice a second", slurmapi.JobDesc{User: "alice", Account: "nlp", QOS: "high"}, true, false},
		{"but not a third", slurmapi.JobDesc{User: "alice", Account: "nlp", QOS: "high"}, false, false},
		{"no limit applies to alice in nlp with normal", slurmapi.JobDesc{User: "alice", Account: "nlp", QOS: "normal", Array: "0-999"}, true, false},
	}
	for _, st := range steps {
		release, err := s.reserve(ctx, cat, &st.d)
		if (err == nil) != st.ok {
			t.Fatalf("%s: got %v", st.name, err)
		}
		if err != nil {
			if e, ok := err.(*slurmapi.Error); !ok || e.Number != slurmapi.ErrAccountingPolicy || e.Status != 400 {
				t.Errorf("%s: refusal %v, want 400 with error %d", st.name, err, slurmapi.ErrAccountingPolicy)
			}
			continue
		}
		if st.release {
			release()
		}
	}
	if lists != 1 {
		t.Errorf("listed the jobs %d times, want once", lists)
	}
}

// TestNoLimitNoList: a site without limits never lists jobs to count.
func TestNoLimitNoList(t *testing.T) {
	s := &submitCounts{list: func(context.Context) ([]v1alpha1.PodGroup, error) { t.Fatal("listed"); return nil, nil }}
	cat := &slurmapi.Catalog{Accounts: map[string]*slurmapi.Account{"nlp": {Name: "nlp"}}, QOS: map[string]*slurmapi.QOS{}}
	if _, err := s.reserve(context.Background(), cat, &slurmapi.JobDesc{User: "alice", Account: "nlp"}); err != nil {
		t.Fatal(err)
	}
}
