package podgrouper

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func obj(apiVersion, kind, name, uid string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetLabels(labels)
	return u
}

// job converts a typed batch/v1 Job, as the API server would return it,
// into the unstructured form the grouper reads.
func job(t testing.TB, name string, parallelism, completions *int32, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "0123456789ab", Labels: labels},
		Spec:       batchv1.JobSpec{Parallelism: parallelism, Completions: completions},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(j)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "feedfacecafe", Labels: labels}}
}

func TestForPod(t *testing.T) {
	pytorch := obj("kubeflow.org/v1", "PyTorchJob", "bert", "aaaaaaaa-1", nil, map[string]any{
		"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)},
			"Worker": map[string]any{"replicas": int64(3)},
		},
	})
	cases := []struct {
		name      string
		pod       *corev1.Pod
		owners    []*unstructured.Unstructured
		nsLabels  map[string]string
		wantName  string
		wantOwner string // Kind/name
		wantMin   int32
		wantQueue string
	}{
		{
			name: "bare pod is a group of one in the default queue",
			pod:  pod("solo", nil), wantName: "solo-feedface", wantOwner: "Pod/solo", wantMin: 1, wantQueue: "default",
		},
		{
			name:     "job parallelism 3",
			pod:      pod("train-x", nil),
			owners:   []*unstructured.Unstructured{job(t, "train", ptr.To[int32](3), nil, map[string]string{v1alpha1.QueueLabel: "nlp"})},
			wantName: "train-01234567", wantOwner: "Job/train", wantMin: 3, wantQueue: "nlp",
		},
		{
			name:     "job completions below parallelism caps the gang",
			pod:      pod("p", nil),
			owners:   []*unstructured.Unstructured{job(t, "short", ptr.To[int32](8), ptr.To[int32](2), nil)},
			wantName: "short-01234567", wantOwner: "Job/short", wantMin: 2, wantQueue: "default",
		},
		{
			name:     "job without parallelism runs one pod",
			pod:      pod("p", nil),
			owners:   []*unstructured.Unstructured{job(t, "one", nil, nil, nil)},
			wantName: "one-01234567", wantOwner: "Job/one", wantMin: 1, wantQueue: "default",
		},
		{
			name:     "suspended job with parallelism 0 still needs one",
			pod:      pod("p", nil),
			owners:   []*unstructured.Unstructured{job(t, "zero", ptr.To[int32](0), nil, nil)},
			wantName: "zero-01234567", wantOwner: "Job/zero", wantMin: 1, wantQueue: "default",
		},
		{
			name: "jobset sums replicas times parallelism over replicated jobs",
			pod:  pod("p", nil),
			owners: []*unstructured.Unstructured{
				job(t, "js-workers-0", ptr.To[int32](4), nil, nil),
				obj("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "bbbbbbbbbbbb", nil, map[string]any{
					"replicatedJobs": []any{
						map[string]any{"name": "driver", "template": map[string]any{"spec": map[string]any{}}},
						map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{"parallelism": int64(4)}}},
					},
				}),
			},
			wantName: "js-bbbbbbbb", wantOwner: "JobSet/js", wantMin: 9, wantQueue: "default",
		},
		{
			name:     "pytorchjob sums master and workers",
			pod:      pod("bert-worker-0", map[string]string{v1alpha1.KAIQueueLabel: "vision"}),
			owners:   []*unstructured.Unstructured{pytorch},
			wantName: "bert-aaaaaaaa", wantOwner: "PyTorchJob/bert", wantMin: 4, wantQueue: "vision",
		},
		{
			name: "mpijob counts launcher and workers, default replicas 1",
			pod:  pod("p", nil),
			owners: []*unstructured.Unstructured{obj("kubeflow.org/v2beta1", "MPIJob", "mpi", "cccccccc", nil, map[string]any{
				"slotsPerWorker": int64(8),
				"mpiReplicaSpecs": map[string]any{
					"Launcher": map[string]any{},
					"Worker":   map[string]any{"replicas": int64(2)},
				},
			})},
			wantName: "mpi-cccccccc", wantOwner: "MPIJob/mpi", wantMin: 3, wantQueue: "default",
		},
		{
			name: "raycluster is head plus worker minReplicas times hosts",
			pod:  pod("p", nil),
			owners: []*unstructured.Unstructured{obj("ray.io/v1", "RayCluster", "rc", "dddddddd", nil, map[string]any{
				"headGroupSpec": map[string]any{},
				"workerGroupSpecs": []any{
					map[string]any{"replicas": int64(5), "minReplicas": int64(2)},
					map[string]any{"replicas": int64(1), "numOfHosts": int64(4)},
				},
			})},
			wantName: "rc-dddddddd", wantOwner: "RayCluster/rc", wantMin: 7, wantQueue: "default",
		},
		{
			name: "rayjob reads its embedded cluster spec and owns the group",
			pod:  pod("p", nil),
			owners: []*unstructured.Unstructured{
				obj("ray.io/v1", "RayCluster", "rj-raycluster", "eeeeeeee", nil, map[string]any{}),
				obj("ray.io/v1", "RayJob", "rj", "ffffffff", map[string]string{v1alpha1.QueueLabel: "nlp"}, map[string]any{
					"rayClusterSpec": map[string]any{"workerGroupSpecs": []any{map[string]any{"replicas": int64(3)}}},
				}),
			},
			wantName: "rj-ffffffff", wantOwner: "RayJob/rj", wantMin: 4, wantQueue: "nlp",
		},
		{
			name: "leaderworkerset: one gang of size per replica",
			pod:  pod("lws-1-2", map[string]string{lwsGroupIndexLabel: "1"}),
			owners: []*unstructured.Unstructured{
				obj("apps/v1", "StatefulSet", "lws-1", "11111111", nil, map[string]any{}),
				obj("v1", "Pod", "lws-1", "22222222", nil, map[string]any{}),
				obj("apps/v1", "StatefulSet", "lws", "33333333", nil, map[string]any{}),
				obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws", "44444444", nil, map[string]any{
					"replicas": int64(3), "leaderWorkerTemplate": map[string]any{"size": int64(4)},
				}),
			},
			wantName: "lws-44444444-1", wantOwner: "LeaderWorkerSet/lws", wantMin: 4, wantQueue: "default",
		},
		{
			name:     "argo workflow: each pod on its own",
			pod:      pod("wf-step-123", nil),
			owners:   []*unstructured.Unstructured{obj("argoproj.io/v1alpha1", "Workflow", "wf", "55555555", map[string]string{v1alpha1.QueueLabel: "nlp"}, map[string]any{})},
			wantName: "wf-step-123-55555555", wantOwner: "Pod/wf-step-123", wantMin: 1, wantQueue: "nlp",
		},
		{
			name: "deployment: each replica its own group, as KAI",
			pod:  pod("web-abc-xyz", nil),
			owners: []*unstructured.Unstructured{
				obj("apps/v1", "ReplicaSet", "web-abc", "66666666", nil, map[string]any{"replicas": int64(3)}),
				obj("apps/v1", "Deployment", "web", "77777777", nil, map[string]any{"replicas": int64(3)}),
			},
			nsLabels: map[string]string{v1alpha1.QueueLabel: "vision"},
			wantName: "web-abc-xyz-feedface", wantOwner: "Pod/web-abc-xyz", wantMin: 1, wantQueue: "vision",
		},
		{
			name:     "sluice label wins over KAI label on the same object",
			pod:      pod("p", map[string]string{v1alpha1.QueueLabel: "nlp", v1alpha1.KAIQueueLabel: "vision"}),
			wantName: "p-feedface", wantOwner: "Pod/p", wantMin: 1, wantQueue: "nlp",
		},
		{
			name:     "pod label wins over owner and namespace",
			pod:      pod("p", map[string]string{v1alpha1.KAIQueueLabel: "vision"}),
			owners:   []*unstructured.Unstructured{job(t, "j", nil, nil, map[string]string{v1alpha1.QueueLabel: "nlp"})},
			nsLabels: map[string]string{v1alpha1.QueueLabel: "research"},
			wantName: "j-01234567", wantOwner: "Job/j", wantMin: 1, wantQueue: "vision",
		},
		{
			name:     "KAI label on the namespace",
			pod:      pod("p", nil),
			nsLabels: map[string]string{v1alpha1.KAIQueueLabel: "vision"},
			wantName: "p-feedface", wantOwner: "Pod/p", wantMin: 1, wantQueue: "vision",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pg, err := ForPod(c.pod, c.owners, c.nsLabels)
			if err != nil {
				t.Fatal(err)
			}
			if pg.Name != c.wantName || pg.Namespace != "ns" {
				t.Errorf("name %s/%s, want ns/%s", pg.Namespace, pg.Name, c.wantName)
			}
			if len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].Kind+"/"+pg.OwnerReferences[0].Name != c.wantOwner ||
				pg.OwnerReferences[0].UID == "" {
				t.Errorf("owner references %+v, want %s", pg.OwnerReferences, c.wantOwner)
			}
			if pg.Spec.MinMember != c.wantMin {
				t.Errorf("minMember %d, want %d", pg.Spec.MinMember, c.wantMin)
			}
			if pg.Spec.Queue != c.wantQueue {
				t.Errorf("queue %q, want %q", pg.Spec.Queue, c.wantQueue)
			}
		})
	}
}

func TestForPodCarriesPartitionAndPriority(t *testing.T) {
	cases := []struct {
		name          string
		pod           *corev1.Pod
		owners        []*unstructured.Unstructured
		wantPartition string
	}{
		{"pod label", pod("p", map[string]string{v1alpha1.PartitionLabel: "h100"}), nil, "h100"},
		{"owner label", pod("p", nil), []*unstructured.Unstructured{job(t, "j", nil, nil, map[string]string{v1alpha1.PartitionLabel: "a100"})}, "a100"},
		{"node selector", &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
			Spec:       corev1.PodSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "a100"}, PriorityClassName: "high"},
		}, nil, "a100"},
		{"none", pod("p", nil), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pg, err := ForPod(c.pod, c.owners, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pg.Spec.Partition != c.wantPartition {
				t.Errorf("partition %q, want %q", pg.Spec.Partition, c.wantPartition)
			}
			if pg.Spec.PriorityClassName != c.pod.Spec.PriorityClassName {
				t.Errorf("priorityClassName %q, want the pod's %q", pg.Spec.PriorityClassName, c.pod.Spec.PriorityClassName)
			}
		})
	}
}

// A malformed owner is reported with what to fix, not guessed around.
func TestForPodRejectsMalformedOwners(t *testing.T) {
	cases := []struct {
		name  string
		owner *unstructured.Unstructured
		want  string
	}{
		{"job parallelism as text", obj("batch/v1", "Job", "j", "1", nil, map[string]any{"parallelism": "three"}), "Job ns/j: spec.parallelism"},
		{"jobset replicas fractional", obj("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "1", nil, map[string]any{
			"replicatedJobs": []any{map[string]any{"replicas": 1.5}},
		}), "replicas is 1.5"},
		{"ray workers not a list", obj("ray.io/v1", "RayCluster", "rc", "1", nil, map[string]any{"workerGroupSpecs": "many"}), "RayCluster ns/rc"},
		{"lws size as text", obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "l", "1", nil, map[string]any{
			"leaderWorkerTemplate": map[string]any{"size": "4"},
		}), "leaderWorkerTemplate.size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ForPod(pod("p", nil), []*unstructured.Unstructured{c.owner}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestGroupNameStaysAValidLength(t *testing.T) {
	long := strings.Repeat("a", 250) + ".b"
	name := groupName(long, uidPart("0123456789"), "12")
	if len(name) > 253 {
		t.Fatalf("name has %d characters", len(name))
	}
	if !strings.HasSuffix(name, "a-01234567-12") {
		t.Fatalf("name %q lost its UID and suffix or kept a trailing dot", name[len(name)-20:])
	}
}

// One naming rule: a workload's name and what is unique to it, never a bare name that a
// later workload of the same name could share.
func TestGroupNamesNeverRepeat(t *testing.T) {
	if got := GroupOfOneName("train", 42); got != "train-job42" {
		t.Errorf("group of one named %q, want train-job42", got)
	}
	if got := groupName("train", uidPart(""), ""); got != "" {
		t.Errorf("a pod without UID or job id named %q, want none", got)
	}
	first, second := groupName("train", uidPart("0f1e2d3c-aaaa"), ""), groupName("train", uidPart("9a8b7c6d-bbbb"), "")
	if first == second || first != "train-0f1e2d3c" {
		t.Errorf("two workloads named train got %q and %q", first, second)
	}
}
