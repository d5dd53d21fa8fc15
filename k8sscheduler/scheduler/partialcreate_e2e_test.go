package scheduler

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// A leader that dies between a 2-node Slurm job's pod creates leaves it Running with one
// pod (TestEtcdPausedLongerThanTheLease, test/chaos). The next leader removes that pod,
// running or already finished, and places the whole job again: it ends Running with both
// pods bound, the first one made anew.
func TestPartlyCreatedSlurmJobIsPlacedAgain(t *testing.T) {
	for _, stray := range []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded} {
		t.Run(string(stray), func(t *testing.T) {
			e := setup(t)
			e.queue("slurm-q", "slurm", 0)
			cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
			pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-9", Namespace: e.ns},
				Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "slurm-q", Partition: "slurm",
					Members: []v1alpha1.MemberSet{{Name: "node", Count: 2, Resources: cpu}},
					Slurm:   &v1alpha1.SlurmJob{User: "alice"}}}
			e.create(pg)
			// The dead leader's writes: the job Running, and the first of its two pods.
			start := metav1.Now()
			pg.Status = v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, StartTime: &start}
			if err := e.crs.Status().Update(context.Background(), pg); err != nil {
				t.Fatal(err)
			}
			nodes, err := e.rig.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if err != nil || len(nodes.Items) == 0 {
				t.Fatalf("nodes: %v (%d)", err, len(nodes.Items))
			}
			var strayUID types.UID
			e.createPod("job-9-0", func(p *corev1.Pod) {
				p.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: "job-9", v1alpha1.TaskGroupAnnotation: "node"}
				p.Spec.NodeName = nodes.Items[0].Name
				p.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
			})
			strayUID = e.pod("job-9-0").UID
			// kwok writes the pod's status too: retry on its newer copy.
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p := e.pod("job-9-0")
				p.Status.Phase = stray
				_, err := e.rig.Client().CoreV1().Pods(e.ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
				return err
			}); err != nil {
				t.Fatal(err)
			}

			factory := &memberPods{}
			e.runWith(factory) // the next leader
			e2e.WaitFor(t, "job-9 placed again with both pods", waitLong, func(ctx context.Context) (bool, error) {
				var pods []string
				for _, name := range []string{"job-9-0", "job-9-1"} {
					p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					if p.UID == strayUID || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
						return false, fmt.Errorf("%s: the stray, unbound or going (node %q)", name, p.Spec.NodeName)
					}
					pods = append(pods, name)
				}
				got := &v1alpha1.PodGroup{}
				if err := e.crs.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "job-9"}, got); err != nil {
					return false, err
				}
				return got.Status.Phase == v1alpha1.PodGroupRunning, fmt.Errorf("pods %v, phase %q", pods, got.Status.Phase)
			})
			if factory.calls.Load() == 0 {
				t.Error("the job's pods were not made by the pod factory")
			}
		})
	}
}
