package scheduler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The write of a batch's reasons changes that annotation on that batch only: the jobs
// stay as the Slurm API wrote them, a batch the submit queue removed is not made again,
// and a batch made anew under the name is not written.
func TestBatchReasonsPatchOnRig(t *testing.T) {
	e := setup(t)
	s, err := New(Config{SubmitBatchNamespace: e.ns}, e.rig.RESTConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := s.kube.CoreV1().ConfigMaps(e.ns)
	value := `[{"reason":"Resources","jobs":[41]}]`
	for _, tc := range []struct {
		name    string
		batch   string
		change  func(t *testing.T, cm *corev1.ConfigMap) // after the scheduler read the batch
		gone    bool                                     // the batch is not there after the write
		written bool
	}{
		{name: "the batch as read", batch: "submit-batch-41", written: true},
		{name: "removed", batch: "submit-batch-42", gone: true, change: func(t *testing.T, cm *corev1.ConfigMap) {
			if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "removed and made anew", batch: "submit-batch-43", change: func(t *testing.T, cm *corev1.ConfigMap) {
			if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Labels: cm.Labels}, Data: cm.Data}
			if _, err := cms.Create(ctx, again, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.batch
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{v1alpha1.SubmitBatchLabel: "true"}}, Data: map[string]string{"41": `{"job":41}`}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.change != nil {
				tc.change(t, cm)
			}
			s.batchReasonsWork(cm, value)(ctx)
			got, err := cms.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err) && tc.gone:
				return
			case err != nil:
				t.Fatal(err)
			case tc.gone:
				t.Fatalf("the removed batch was made again: %v", got.Annotations)
			}
			if said := got.Annotations[v1alpha1.PendingReasonsAnnotation] == value; said != tc.written {
				t.Errorf("batch %s (uid %s, read as %s) says %q", name, got.UID, cm.UID, got.Annotations[v1alpha1.PendingReasonsAnnotation])
			}
			if got.Data["41"] != `{"job":41}` || len(got.Data) != 1 {
				t.Errorf("the batch's jobs changed: %v", got.Data)
			}
		})
	}
}
