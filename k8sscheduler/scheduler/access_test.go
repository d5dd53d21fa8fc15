package scheduler

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A group whose namespace its queue does not admit is kept out of placement with the
// InvalidAccount reason, naming the queues it may use; relabelling the namespace or
// opening the queue lets it in on the next cycle. A Slurm job in its account's namespace
// always passes.
func TestQueueAccessBlocksGroups(t *testing.T) {
	nlp := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "nlp"},
		Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "nlp"}}}}
	open := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{}}}
	members := []v1alpha1.MemberSet{{Name: "node", Count: 1, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}}
	tests := []struct {
		name      string
		namespace string
		labels    map[string]string
		queue     string
		slurm     bool
		want      string // "" when placed
	}{
		{"the team's namespace", "ml", map[string]string{"team": "nlp"}, "nlp", false, ""},
		{"another team's namespace", "cv", map[string]string{"team": "vision"}, "nlp", false, "queues this namespace may use: default"},
		{"an unknown queue is left to the core", "cv", nil, "future", false, ""},
		{"a Slurm job in its account's namespace", "slurm-nlp", nil, "nlp", true, ""},
		{"a Slurm-shaped group elsewhere", "cv", nil, "nlp", true, `does not admit namespace "cv"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.slurmPods = true
			c.setQueueAccess(nlp, false)
			c.setQueueAccess(open, false)
			c.setNamespace(tt.namespace, tt.labels, false)
			pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: tt.namespace},
				Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: tt.queue, Partition: "h100", Members: members}}
			if tt.slurm {
				pg.Spec.Slurm = &v1alpha1.SlurmJob{User: "alice"}
			}
			c.setPodGroup(pg)
			_, blocked := c.snapshot(time.Now())
			g := c.groups[tt.namespace+"/pg"]
			if tt.want == "" {
				if !g.include {
					t.Fatalf("not placed: %+v", g.blocked)
				}
				return
			}
			if g.include || len(blocked) != 1 || blocked[0].Code != ReasonInvalidAccount || !strings.Contains(blocked[0].Reason, tt.want) {
				t.Fatalf("include %v, blocked %+v; want %s saying %q", g.include, blocked, ReasonInvalidAccount, tt.want)
			}
			// The namespace joins the team: the group is judged again and placed.
			c.setNamespace(tt.namespace, map[string]string{"team": "nlp"}, false)
			if _, blocked = c.snapshot(time.Now()); !g.include || len(blocked) != 0 {
				t.Errorf("after relabelling the namespace: include %v, blocked %+v", g.include, blocked)
			}
		})
	}
}
