package kube

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// groupOfOne is a bare pod as the webhook admits it: its PodGroup named and marked
// derived, a job id, a queue.
func groupOfOne(name, id string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ml", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)),
			Labels:            map[string]string{v1alpha1.JobIDLabel: id, v1alpha1.QueueLabel: "vision"},
			Annotations:       map[string]string{v1alpha1.PodGroupAnnotation: "pg-" + name, v1alpha1.PodGroupDerivedAnnotation: "true"},
		},
	}
}

func TestBarePodsListAsJobs(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 12, 3, 9, 0, 5, 0, time.UTC))
	on := func(p corev1.Pod, node string, phase corev1.PodPhase) corev1.Pod {
		p.Spec.NodeName, p.Status.Phase, p.Status.StartTime = node, phase, &started
		return p
	}
	owned := groupOfOne("owned", "905")
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "j"}}
	named := groupOfOne("named", "906")
	delete(named.Annotations, v1alpha1.PodGroupDerivedAnnotation) // the user named its PodGroup
	unnumbered := groupOfOne("unnumbered", "")
	written := groupOfOne("written", "907")

	pods := []corev1.Pod{
		groupOfOne("waiting", "901"),
		on(groupOfOne("running", "902"), "h100-3", corev1.PodRunning),
		on(groupOfOne("done", "903"), "h100-1", corev1.PodSucceeded),
		on(groupOfOne("crashed", "904"), "h100-2", corev1.PodFailed),
		owned, named, unnumbered, written,
	}
	have := []v1alpha1.PodGroup{*jobstate.ImpliedPodGroup(&written)}
	jobs := jobstate.Assemble(have, pods)
	if len(jobs) == 0 || jobs[0].Kind != jobstate.Stored || jobs[0].Group.Name != "pg-written" {
		t.Fatalf("the written group is not the first job: %+v", jobs)
	}
	implied := jobs[1:]

	want := map[uint32]struct {
		name, state, nodes string
	}{
		901: {"ml/pg-waiting", "PENDING", ""},
		902: {"ml/pg-running", "RUNNING", "h100-3"},
		903: {"ml/pg-done", "COMPLETED", "h100-1"},
		904: {"ml/pg-crashed", "FAILED", "h100-2"},
	}
	got := map[uint32]bool{}
	for i := range implied {
		pg := implied[i].Group
		if implied[i].Kind != jobstate.ImpliedByPod {
			t.Errorf("job %s is %s, want %s", implied[i].Key(), implied[i].Kind, jobstate.ImpliedByPod)
		}
		j, err := JobFromPodGroup(pg)
		if err != nil {
			t.Fatal(err)
		}
		setView(&j, &implied[i])
		w, ok := want[j.ID]
		switch {
		case !ok:
			t.Errorf("job %d (%s/%s) listed, it is not an unwritten group of one", j.ID, pg.Namespace, pg.Name)
			continue
		case got[j.ID]:
			t.Errorf("job %d listed twice", j.ID)
		}
		got[j.ID] = true
		if j.Desc.Name != w.name || j.State[0] != w.state || j.NodeList != w.nodes {
			t.Errorf("job %d: %s %v on %q, want %s %s on %q", j.ID, j.Desc.Name, j.State, j.NodeList, w.name, w.state, w.nodes)
		}
		if !j.Manifest || j.Desc.Account != "vision" || j.Desc.User != "ns:ml" || j.Desc.Nodes != 1 || !j.SubmitTime.Equal(pods[0].CreationTimestamp.Time) {
			t.Errorf("job %d: manifest %v account %q user %q nodes %d submitted %v", j.ID, j.Manifest, j.Desc.Account, j.Desc.User, j.Desc.Nodes, j.SubmitTime)
		}
		if w.state != "PENDING" && !j.StartTime.Equal(started.Time) {
			t.Errorf("job %d started %v, want %v", j.ID, j.StartTime, started.Time)
		}
	}
	for id := range want {
		if !got[id] {
			t.Errorf("job %d missing from the list", id)
		}
	}
}

func TestCancellableBarePod(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		status int // 0: cancellable
	}{
		{"pending", func(*corev1.Pod) {}, 0},
		{"running", func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "h100-0", corev1.PodRunning }, 0},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, http.StatusConflict},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, http.StatusConflict},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := groupOfOne("p", "910")
			tt.change(&p)
			err := cancellable(910, &p)
			if tt.status == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			e, ok := err.(*slurmapi.Error)
			if !ok || e.Status != tt.status || e.Number != slurmapi.ErrAlreadyDone {
				t.Errorf("got %v, want %d ErrAlreadyDone", err, tt.status)
			}
		})
	}
}
