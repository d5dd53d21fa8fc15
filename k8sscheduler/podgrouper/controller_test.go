package podgrouper_test

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/test/e2e"
)

// feeds are the two ways the controller gets its pods: a watch of its own, or an
// informer of the caller's (sluice server's scheduler) calling its Observer.
var feeds = []string{"own watch", "observer"}

// runController runs a pod grouper for the Sluice scheduler on the rig until the test
// ends, fed as feed says, and returns a client, a fresh namespace and a context.
func runController(t *testing.T, feed string) (client.Client, string, context.Context) {
	t.Helper()
	c := rigClient(t)
	rig := e2e.Rig(t)
	ns := e2e.Namespace(t, rig)
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := podgrouper.NewController(rig.RESTConfig(), []string{v1alpha1.DefaultSchedulerName})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var factory informers.SharedInformerFactory
	if feed == "observer" {
		observe := ctrl.Observer()
		factory = informers.NewSharedInformerFactory(rig.Client(), 0)
		call := func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				observe(p)
			}
		}
		if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: call, UpdateFunc: func(_, obj any) { call(obj) }}); err != nil {
			cancel()
			t.Fatal(err)
		}
		factory.Start(ctx.Done())
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if factory != nil {
			factory.Shutdown()
		}
	})
	return c, ns, ctx
}

// The controller names one PodGroup (minMember = parallelism) on every pod
// of a Job with the Sluice scheduler, and leaves other schedulers' pods alone.
func TestControllerAnnotatesJobPodsWithTheirGroup(t *testing.T) {
	for _, feed := range feeds {
		t.Run(feed, func(t *testing.T) { testAnnotatesJobPods(t, feed) })
	}
}

func testAnnotatesJobPods(t *testing.T, feed string) {
	c, ns, ctx := runController(t, feed)

	mkJob := func(name, scheduler string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](3),
				Completions: ptr.To[int32](3),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.QueueLabel: "vision"}},
					Spec: corev1.PodSpec{
						SchedulerName: scheduler,
						RestartPolicy: corev1.RestartPolicyNever,
						// A node selector no node has keeps the default scheduler's pods unbound too.
						NodeSelector: map[string]string{"example.com/none": "x"},
						Containers:   []corev1.Container{{Name: "main", Image: "busybox"}},
					},
				},
			},
		}
	}
	ours, theirs := mkJob("gang", v1alpha1.DefaultSchedulerName), mkJob("other", corev1.DefaultSchedulerName)
	for _, j := range []*batchv1.Job{ours, theirs} {
		if err := c.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	var pods corev1.PodList
	e2e.WaitFor(t, "3 pods of the Sluice Job naming one PodGroup", time.Minute, func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: ours.Name}); err != nil {
			return false, err
		}
		if len(pods.Items) != 3 {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Annotations[v1alpha1.PodGroupAnnotation] == "" || p.Annotations[v1alpha1.PodGroupAnnotation] != pods.Items[0].Annotations[v1alpha1.PodGroupAnnotation] {
				return false, nil
			}
		}
		return true, nil
	})
	var pg v1alpha1.PodGroup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pods.Items[0].Annotations[v1alpha1.PodGroupAnnotation]}, &pg); err != nil {
		t.Fatal(err)
	}
	if pg.Spec.MinMember != 3 || pg.Spec.Queue != "vision" {
		t.Errorf("PodGroup %s: minMember %v queue %q, want 3 and vision", pg.Name, pg.Spec.MinMember, pg.Spec.Queue)
	}
	var other corev1.PodList
	if err := c.List(ctx, &other, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: theirs.Name}); err != nil {
		t.Fatal(err)
	}
	for _, p := range other.Items {
		if a := p.Annotations[v1alpha1.PodGroupAnnotation]; a != "" {
			t.Errorf("pod %s of the default scheduler got PodGroup %q", p.Name, a)
		}
	}
}

// A pod whose group the webhook named at admission gets that group created, owned by
// the pod, and is itself left untouched (no patch).
func TestControllerCreatesGroupsNamedAtAdmission(t *testing.T) {
	for _, feed := range feeds {
		t.Run(feed, func(t *testing.T) { testCreatesGroupsNamedAtAdmission(t, feed) })
	}
}

func testCreatesGroupsNamedAtAdmission(t *testing.T, feed string) {
	c, ns, ctx := runController(t, feed)

	admitted := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Labels:      map[string]string{v1alpha1.QueueLabel: "vision"},
				Annotations: map[string]string{v1alpha1.PodGroupAnnotation: name, v1alpha1.PodGroupDerivedAnnotation: "true"}},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName,
				NodeSelector: map[string]string{"example.com/none": "x"},
				Containers:   []corev1.Container{{Name: "main", Image: "busybox"}}},
		}
	}
	solo := admitted("solo")
	if err := c.Create(ctx, solo); err != nil {
		t.Fatal(err)
	}
	var pg v1alpha1.PodGroup
	e2e.WaitFor(t, "PodGroup solo created", time.Minute, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "solo"}, &pg)
		return err == nil, err
	})
	if pg.Spec.Queue != "vision" || pg.Spec.MinMember != 1 || len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID != solo.UID {
		t.Errorf("group %+v owned by %+v, want queue vision, minMember 1, owned by pod %s", pg.Spec, pg.OwnerReferences, solo.UID)
	}
	var now corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(solo), &now); err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != solo.ResourceVersion {
		t.Errorf("the pod was written (resourceVersion %s -> %s): it needed no patch", solo.ResourceVersion, now.ResourceVersion)
	}
}
