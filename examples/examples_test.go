package examples

import (
	"io/fs"
	"sort"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

// Every example file decodes strictly, so a renamed or misspelt field in
// a type or an example fails here rather than on a user's cluster.
func TestEveryExampleDecodesStrictly(t *testing.T) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if want := []string{GPUJob, KAIJob, Site}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("example files %v, want %v (add new ones to the constants)", names, want)
	}
	for _, name := range names {
		objs, err := Objects(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(objs) == 0 {
			t.Errorf("%s: no objects", name)
		}
	}
}

func TestDecodeRejectsBadDocuments(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown field", "apiVersion: scheduling.sluice.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\nspec: {parent: b}\n", "unknown field"},
		{"duplicate field", "apiVersion: scheduling.sluice.dev/v1alpha1\nkind: QOS\nmetadata: {name: a}\nspec: {priority: 1, priority: 2}\n", "already set"},
		{"unknown kind", "apiVersion: scheduling.sluice.dev/v1alpha1\nkind: Queues\nmetadata: {name: a}\n", "no kind"},
		{"wrong type", "apiVersion: scheduling.sluice.dev/v1alpha1\nkind: PodGroup\nmetadata: {name: a}\nspec: {minMember: three, queue: a}\n", "minMember"},
		{"second document bad", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {schedulername: x}\n", "document 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// The site is the one DESIGN.md promises a newcomer: partitions h100
// (binpack) and a100 (spread), research -> nlp, vision plus default, QOS
// normal, preemptible and high, alice in nlp and bob in vision.
func TestSiteHasTheDocumentedShape(t *testing.T) {
	objs, err := Objects(Site)
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]v1alpha1.PlacementStrategy{}
	parents := map[string]string{}
	users := map[string][]string{}
	qos := map[string]bool{}
	access := map[string]v1alpha1.QueueAccess{}
	namespaces := map[string]map[string]string{}
	for _, o := range objs {
		switch o := o.(type) {
		case *v1alpha1.Partition:
			partitions[o.Name] = o.Spec.Placement
			if o.Spec.NodeSelector[v1alpha1.PartitionLabel] != o.Name {
				t.Errorf("partition %s selects %v, want %s=%s", o.Name, o.Spec.NodeSelector, v1alpha1.PartitionLabel, o.Name)
			}
		case *v1alpha1.Queue:
			parents[o.Name] = o.Spec.ParentQueue
			users[o.Name] = o.Spec.Users
			access[o.Name] = v1alpha1.AccessOf(o)
		case *corev1.Namespace:
			namespaces[o.Name] = o.Labels
		case *v1alpha1.QOS:
			qos[o.Name] = o.Spec.Preemptible
		default:
			t.Errorf("unexpected %T in site", o)
		}
	}
	if len(partitions) != 2 || partitions["h100"] != v1alpha1.PlacementBinpack || partitions["a100"] != v1alpha1.PlacementSpread {
		t.Errorf("partitions %v", partitions)
	}
	wantParents := map[string]string{"research": "", "nlp": "research", "vision": "research", "default": ""}
	if len(parents) != len(wantParents) {
		t.Errorf("queues %v, want %v", parents, wantParents)
	}
	for q, p := range wantParents {
		if got, ok := parents[q]; !ok || got != p {
			t.Errorf("queue %s: parent %q (exists %v), want %q", q, got, ok, p)
		}
	}
	if strings.Join(users["nlp"], ",") != "alice" || strings.Join(users["vision"], ",") != "bob" {
		t.Errorf("users %v, want alice in nlp and bob in vision", users)
	}
	if len(qos) != 3 || qos["normal"] || !qos["preemptible"] || qos["high"] {
		t.Errorf("qos %v, want normal, preemptible (preemptible) and high", qos)
	}
	// Each team's namespace may use its own queue and default, not the other team's.
	for ns, want := range map[string]string{"nlp": "default,nlp", "vision": "default,vision", "elsewhere": "default"} {
		all := make([]v1alpha1.QueueAccess, 0, len(access))
		for _, a := range access {
			all = append(all, a)
		}
		if got := strings.Join(v1alpha1.AdmittingQueues(all, ns, namespaces[ns]), ","); got != want {
			t.Errorf("namespace %s may use queues %s, want %s", ns, got, want)
		}
	}
}

// The example workloads are meant for Sluice: scheduler name and a queue. The KAI one is
// as KAI users write it, for KAI mode.
func TestExampleWorkloadsTargetSluice(t *testing.T) {
	cases := []struct {
		file      string
		wantLabel string
		wantQueue string
		scheduler string
	}{
		{KAIJob, v1alpha1.KAIQueueLabel, "nlp", kai.SchedulerName},
		{GPUJob, v1alpha1.QueueLabel, "vision", v1alpha1.DefaultSchedulerName},
	}
	// Each runs in the namespace the site opens its queue to.
	for _, c := range cases {
		objs, err := Objects(c.file)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %d objects, %v", c.file, len(objs), err)
		}
		var meta map[string]string
		var spec corev1.PodSpec
		if ns := objs[0].(metav1.Object).GetNamespace(); ns != c.wantQueue {
			t.Errorf("%s: namespace %q, want %q (the site's namespace for queue %s)", c.file, ns, c.wantQueue, c.wantQueue)
		}
		switch o := objs[0].(type) {
		case *corev1.Pod:
			meta, spec = o.Labels, o.Spec
			if o.Annotations[v1alpha1.GPUFractionAnnotation] == "" {
				t.Errorf("%s: no %s annotation", c.file, v1alpha1.GPUFractionAnnotation)
			}
		case *batchv1.Job:
			meta, spec = o.Spec.Template.Labels, o.Spec.Template.Spec
		default:
			t.Fatalf("%s: unexpected %T", c.file, o)
		}
		if spec.SchedulerName != c.scheduler {
			t.Errorf("%s: schedulerName %q, want %q", c.file, spec.SchedulerName, c.scheduler)
		}
		if meta[c.wantLabel] != c.wantQueue {
			t.Errorf("%s: label %s=%q, want %q", c.file, c.wantLabel, meta[c.wantLabel], c.wantQueue)
		}
	}
}
