package chart

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// manifestJobPlaced: a batch/v1 Job applied the Kubernetes way (schedulerName
// sluice, a queue label, 1 GPU per pod, parallelism 2) is run by the server
// holding only the chart's RBAC: the API server sends its pods through the
// webhook served with the certificate cert-controller made, which names their PodGroup, the
// pod grouper creates that one PodGroup of two, and the scheduler binds both.
func manifestJobPlaced(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	ns := e2e.TeamNamespace(t, c, "nlp") // the site's nlp queue admits it
	job := gpuJob("train", 2)
	if _, err := c.Client().BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Job %s/%s: %v", ns, job.Name, err)
	}
	var pods []corev1.Pod
	e2e.WaitFor(t, "the Job's 2 pods grouped and bound", time.Minute, func(ctx context.Context) (bool, error) {
		list, err := c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		if err != nil {
			return false, err
		}
		pods = list.Items
		if len(pods) != 2 {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if p.Annotations[v1alpha1.PodGroupAnnotation] == "" || p.Spec.NodeName == "" {
				return false, fmt.Errorf("pod %s: PodGroup %q, node %q", p.Name, p.Annotations[v1alpha1.PodGroupAnnotation], p.Spec.NodeName)
			}
		}
		return true, nil
	})
	group := pods[0].Annotations[v1alpha1.PodGroupAnnotation]
	if other := pods[1].Annotations[v1alpha1.PodGroupAnnotation]; other != group {
		t.Errorf("the Job's pods are in PodGroups %q and %q, want one", group, other)
	}
	// The webhook named the group at admission (reading the Job with the chart's RBAC),
	// so the grouper only created it and patched no pod.
	for _, p := range pods {
		if p.Annotations[v1alpha1.PodGroupDerivedAnnotation] != "true" {
			t.Errorf("pod %s: group %q not named at admission (annotations %v)", p.Name, p.Annotations[v1alpha1.PodGroupAnnotation], p.Annotations)
		}
	}
	pgs := schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "podgroups"}
	pg, err := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(pgs).Namespace(ns).Get(ctx, group, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Job's PodGroup %s/%s: %v", ns, group, err)
	}
	minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue")
	if minMember != 2 || queue != "nlp" {
		t.Errorf("PodGroup %s: minMember %d queue %q, want 2 and nlp", group, minMember, queue)
	}
	// Whole-GPU pods get their devices from the node's device plugin: the
	// webhook (which named the group above, so the API server trusted the
	// CA it registered) must not point them at a GPU of Sluice's choosing, which
	// could be another pod's.
	for _, p := range pods {
		if hasEnv(p.Spec.Containers[0], v1alpha1.VisibleDevicesEnv) {
			t.Errorf("whole-GPU pod %s has %s set by admission; the device plugin chooses its GPUs", p.Name, v1alpha1.VisibleDevicesEnv)
		}
	}
}

// gpuJob is a Job of n parallel 1-GPU pods for Sluice in queue nlp.
func gpuJob(name string, n int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Parallelism:  &n,
			Completions:  &n,
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
				Spec: corev1.PodSpec{
					SchedulerName: v1alpha1.DefaultSchedulerName,
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:      "main",
						Image:     "registry.example/train:latest",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// barePodPlaced: a bare pod the chart's server admits is numbered (a group of one), placed
// with no PodGroup written, and is a job in the Slurm API under its id, whose user is the
// namespace (jwtKey signs that user's token).
func barePodPlaced(t *testing.T, c *cluster.Cluster, base string, jwtKey []byte) {
	t.Helper()
	ctx := context.Background()
	ns := e2e.TeamNamespace(t, c, "nlp") // the site's nlp queue admits it
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "eval", Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
		Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "main", Image: "registry.example/eval:latest",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("1")}}}}}}
	if _, err := c.Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, pod.Name, err)
	}
	var got *corev1.Pod
	e2e.WaitFor(t, "the bare pod bound", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := c.Client().CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Spec.NodeName != "", fmt.Errorf("not bound")
	})
	id := v1alpha1.JobIDOf(got.Labels)
	var err error
	if !jobstate.GroupOfOne(got) {
		t.Fatalf("the bare pod is not a group of one: labels %v annotations %v", got.Labels, got.Annotations)
	}
	pgs := schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "podgroups"}
	_, err = dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(pgs).Namespace(ns).Get(ctx, got.Annotations[v1alpha1.PodGroupAnnotation], metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the bare pod was placed at once, yet its PodGroup was written (err %v)", err)
	}
	// Any user reads it (the chart keeps Slurm's default, no PrivateData); its user is the
	// namespace's principal, which no token can name.
	token, err := slurmapi.MintToken(jwtKey, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/slurm/v0.0.44/job/%d", base, id), nil)
	req.Header.Set("X-SLURM-USER-TOKEN", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"job_id":%d`, id)) || !strings.Contains(string(body), "RUNNING") ||
		!strings.Contains(string(body), fmt.Sprintf(`"user_name":"ns:%s"`, ns)) {
		t.Errorf("GET job/%d: %d %s; want the bare pod's job, RUNNING, of user ns:%s", id, resp.StatusCode, body, ns)
	}
}
