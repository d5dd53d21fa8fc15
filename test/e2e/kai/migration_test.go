package kai

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	kaiapi "github.com/sluicehq/sluice/k8sscheduler/kai"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// settle bounds each wait; a loaded rig is slow, and nothing here depends on timing.
const settle = 3 * time.Minute

// TestKAIMigration: KAI's Queues are imported (the dry run writes nothing, the import
// round-trips), then KAI-style workloads applied unchanged are all placed by Sluice in
// KAI mode: fractions, GPU memory, a gang through a KAI PodGroup, a Deployment, and
// inference pods that stay within their queue's quota and are not preempted when another
// queue reclaims its quota; the KAI Queues' status shows what each queue holds.
func TestKAIMigration(t *testing.T) {
	rig := e2e.Rig(t)
	cfg := rig.RESTConfig()
	ctx := context.Background()
	crs := sluiceproc.InstallSite(t, cfg)
	if err := kaiapi.InstallCRDs(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{kaiPriorityClasses, kaiQueues} {
		if err := apply(t, cfg, "", m); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { cleanupQueues(cfg, crs) })

	importQueues(t, rig.Kubeconfig, crs)

	sluiceproc.Start(t, "sluice server", map[string]any{
		"kubeconfig":     rig.ServerKubeconfig,
		"stateDir":       filepath.Join(t.TempDir(), "state"),
		"listen":         "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false},
		"remediation":    map[string]any{"enabled": false},
		"webhook":        map[string]any{"enabled": true, "addr": "127.0.0.1:0", "clientCAFile": rig.WebhookClientCA},
		"kai":            map[string]any{"enabled": true},
	})
	kube := rig.Client()
	ns := e2e.Namespace(t, rig)
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, crs, kube, ns)
		}
	})

	// A bad KAI annotation is refused at admission with what to fix. The API server picks
	// the server's webhook registration up a moment after the server serves: until then
	// a pod goes in unseen, so one admitted before is deleted and the create tried again
	// (which also makes sure every workload below goes through the webhook).
	var err error
	e2e.WaitFor(t, "the webhook refuses gpu-fraction 1.5", settle, func(ctx context.Context) (bool, error) {
		if err = apply(t, cfg, ns, badFraction); err != nil {
			return !strings.Contains(err.Error(), "already exists"), err // an admitted one is still going
		}
		if derr := kube.CoreV1().Pods(ns).Delete(ctx, "too-much", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); derr != nil {
			return false, derr
		}
		return false, fmt.Errorf("admitted before the webhook was registered: deleted, trying again")
	})
	if !strings.Contains(err.Error(), `gpu-fraction="1.5"`) || !strings.Contains(err.Error(), "(0,1)") {
		t.Fatalf("a kai-scheduler pod with gpu-fraction 1.5: %v, want a refusal naming the annotation and its range", err)
	}

	// Serving: the inference pod, then three replicas of non-preemptible inference in a
	// queue whose quota is 3 GPUs: two run, the third waits, as KAI keeps
	// non-preemptible work within quota.
	mustApply(t, cfg, ns, servingWorkloads)
	inference := waitBound(t, kube, ns, "inference")[0]
	if inference.Spec.SchedulerName != v1alpha1.DefaultSchedulerName || inference.Spec.Priority == nil || *inference.Spec.Priority != 125 {
		t.Errorf("inference pod: schedulerName %q priority %v, want sluice and 125", inference.Spec.SchedulerName, inference.Spec.Priority)
	}
	var serving []corev1.Pod
	e2e.WaitFor(t, "two serve replicas bound, the third waiting on the queue's quota", settle, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=serve"})
		if err != nil {
			return false, err
		}
		serving = serving[:0]
		var waiting *corev1.Pod
		for i, p := range pods.Items {
			if p.Spec.NodeName != "" {
				serving = append(serving, p)
			} else {
				waiting = &pods.Items[i]
			}
		}
		if len(pods.Items) != 3 || len(serving) != 2 || waiting == nil {
			return false, fmt.Errorf("%d pods, %d bound", len(pods.Items), len(serving))
		}
		return waitingOn(ctx, crs, waiting, bridge.ReasonQueueQuota)
	})
	for _, p := range serving {
		if p.Spec.Priority == nil || *p.Spec.Priority != 125 || p.Spec.PriorityClassName != "inference" {
			t.Errorf("serve pod %s: class %q priority %v, want inference 125 from the Deployment's priorityClassName label", p.Name, p.Spec.PriorityClassName, p.Spec.Priority)
		}
	}

	// Training: two halves of a GPU, by fraction and by memory, and a gang of two through
	// a KAI PodGroup.
	mustApply(t, cfg, ns, trainingWorkloads)
	waitBound(t, kube, ns, "notebook-fraction", "notebook-memory", "train-solo", "gang-0", "gang-1")
	gang := &v1alpha1.PodGroup{}
	if err := crs.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gang"}, gang); err != nil {
		t.Fatalf("the Sluice PodGroup of KAI PodGroup gang: %v", err)
	}
	if gang.Spec.MinMember != 2 || gang.Spec.Queue != "kai-train" || len(gang.OwnerReferences) != 1 || gang.OwnerReferences[0].APIVersion != "scheduling.run.ai/v2alpha2" {
		t.Errorf("Sluice PodGroup gang: %+v owned by %+v, want minMember 2 in kai-train, owned by the KAI PodGroup", gang.Spec, gang.OwnerReferences)
	}

	// A KAI PodGroup Sluice cannot take is left with a Warning Event on it that says why,
	// where `kubectl describe` shows it.
	mustApply(t, cfg, ns, badKAIPodGroup)
	e2e.WaitFor(t, "a NotMirrored Event on KAI PodGroup bad-queue", settle, func(ctx context.Context) (bool, error) {
		evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bad-queue"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == kaiapi.NotMirrored && e.InvolvedObject.Kind == "PodGroup" &&
				e.InvolvedObject.APIVersion == "scheduling.run.ai/v2alpha2" && strings.Contains(e.Message, `"Train_Team"`) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none NotMirrored naming the queue", len(evs.Items))
	})

	// research claims its quota: train, over its own, gives GPUs back; the inference pods
	// are not touched.
	mustApply(t, cfg, ns, researchJob)
	e2e.WaitFor(t, "the research Job's three pods bound", settle, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=research"})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				bound++
			}
		}
		return bound == 3, fmt.Errorf("%d of %d bound", bound, len(pods.Items))
	})
	for _, want := range append([]corev1.Pod{*inference}, serving...) {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil || got.UID != want.UID || got.DeletionTimestamp != nil || got.Spec.NodeName != want.Spec.NodeName {
			t.Errorf("non-preemptible pod %s after the reclaim: %v, want it running where it ran", want.Name, describe(got, err))
		}
	}

	// What KAI's tools read: each KAI Queue's status, written from its Sluice Queue.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "KAI Queue status: serve 3 GPUs, research 3, train at most 3 (1 on H100, 2 on A100)", settle, func(ctx context.Context) (bool, error) {
		got := map[string]resource.Quantity{}
		for _, q := range []string{"kai-serve", "kai-research", "kai-train"} {
			u, err := dyn.Resource(kaiapi.QueuesGVR).Get(ctx, q, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s, _, _ := unstructured.NestedString(u.Object, "status", "allocated", "nvidia.com/gpu")
			got[q], err = resource.ParseQuantity(cmpOr(s, "0"))
			if err != nil {
				return false, err
			}
		}
		serve, research, train := got["kai-serve"], got["kai-research"], got["kai-train"]
		ok := serve.Cmp(resource.MustParse("3")) == 0 && research.Cmp(resource.MustParse("3")) == 0 && train.Cmp(resource.MustParse("3")) <= 0
		return ok, fmt.Errorf("allocated: serve %s research %s train %s", serve.String(), research.String(), train.String())
	})
}

// importQueues runs `sluice import kai`: the dry run says what it would write and writes
// nothing; the import writes the queues KAI states; a second dry run finds nothing to do.
func importQueues(t *testing.T, kubeconfig string, crs client.Client) {
	t.Helper()
	out, err := sluice(t, "import", "kai", "--dry-run", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("sluice import kai --dry-run: %v\n%s", err, out)
	}
	for _, want := range []string{"would create     kai-serve parent=kai-org priority=150 gpu=3/-/1",
		"would create     kai-train parent=kai-org priority=100 gpu=1/-/2 cpu=8/-/2 memory=65536M/-/1", "4 create, dry run: nothing written"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if err := crs.Get(context.Background(), types.NamespacedName{Name: "kai-serve"}, &v1alpha1.Queue{}); err == nil {
		t.Fatal("the dry run wrote Queue kai-serve")
	}
	if out, err := sluice(t, "import", "kai", "--kubeconfig", kubeconfig); err != nil {
		t.Fatalf("sluice import kai: %v\n%s", err, out)
	}
	out, err = sluice(t, "import", "kai", "--dry-run", "--kubeconfig", kubeconfig)
	if err != nil || !strings.Contains(out, "4 unchanged, dry run") {
		t.Fatalf("a second dry run: %v\n%s\nwant every queue unchanged", err, out)
	}
	var train v1alpha1.Queue
	if err := crs.Get(context.Background(), types.NamespacedName{Name: "kai-train"}, &train); err != nil {
		t.Fatal(err)
	}
	q := train.Spec.Quotas
	if train.Spec.ParentQueue != "kai-org" || len(q) != 1 || q[0].Partition != "*" || q[0].GPU.Quota.Cmp(resource.MustParse("1")) != 0 ||
		*q[0].GPU.OverQuotaWeight != 2 || q[0].GPU.Limit != nil || q[0].CPU.Quota.Cmp(resource.MustParse("8")) != 0 ||
		q[0].Memory.Quota.Cmp(resource.MustParse("65536M")) != 0 || q[0].Memory.Limit != nil || train.Spec.NamespaceSelector == nil {
		t.Errorf("imported kai-train: %+v", train.Spec)
	}
}

func mustApply(t *testing.T, cfg *rest.Config, ns, manifest string) {
	t.Helper()
	if err := apply(t, cfg, ns, manifest); err != nil {
		t.Fatal(err)
	}
}

// waitBound waits until every named pod is bound and returns them.
func waitBound(t *testing.T, kube kubernetes.Interface, ns string, names ...string) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(names))
	for i, name := range names {
		e2e.WaitFor(t, "pod "+name+" bound", settle, func(ctx context.Context) (bool, error) {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			out[i] = p
			return p.Spec.NodeName != "", fmt.Errorf("unbound")
		})
	}
	return out
}

// waitingOn reports whether pod's PodGroup says it waits for reason.
func waitingOn(ctx context.Context, crs client.Client, pod *corev1.Pod, reason string) (bool, error) {
	name := pod.Annotations[v1alpha1.PodGroupAnnotation]
	if name == "" {
		return false, fmt.Errorf("pod %s has no PodGroup yet", pod.Name)
	}
	pg := &v1alpha1.PodGroup{}
	if err := crs.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, pg); err != nil {
		return false, err
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled)
	if c == nil || c.Reason != reason {
		return false, fmt.Errorf("PodGroup %s: Scheduled %+v, want reason %s", name, c, reason)
	}
	return true, nil
}

// dumpState logs why each group waits and what each queue holds, for a failed run.
func dumpState(t *testing.T, crs client.Client, kube kubernetes.Interface, ns string) {
	ctx := context.Background()
	var groups v1alpha1.PodGroupList
	if err := crs.List(ctx, &groups, client.InNamespace(ns)); err == nil {
		for _, g := range groups.Items {
			c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.PodGroupConditionScheduled)
			t.Logf("PodGroup %s queue %s min %d phase %q scheduled %+v", g.Name, g.Spec.Queue, g.Spec.MinMember, g.Status.Phase, c)
		}
	}
	var queues v1alpha1.QueueList
	if err := crs.List(ctx, &queues, client.MatchingLabels{kaiapi.MirrorLabel: "true"}); err == nil {
		for _, q := range queues.Items {
			t.Logf("Queue %s allocated %v fairShare %v requested %v", q.Name, qtyOr(q.Status.Allocated.GPU), qtyOr(q.Status.FairShare.GPU), qtyOr(q.Status.Requested.GPU))
		}
	}
	if pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s node %q priority %v group %s", p.Name, p.Spec.NodeName, p.Spec.Priority, p.Annotations[v1alpha1.PodGroupAnnotation])
		}
	}
}

func qtyOr(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

func describe(p *corev1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("uid %s node %q deleting %v", p.UID, p.Spec.NodeName, p.DeletionTimestamp != nil)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cleanupQueues removes the queues the test made, KAI's and their Sluice mirrors, so a
// later test on the rig starts from the site alone.
func cleanupQueues(cfg *rest.Config, crs client.Client) {
	ctx := context.Background()
	if dyn, err := dynamic.NewForConfig(cfg); err == nil {
		_ = dyn.Resource(kaiapi.QueuesGVR).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	_ = crs.DeleteAllOf(ctx, &v1alpha1.Queue{}, client.MatchingLabels{kaiapi.MirrorLabel: "true"})
}
