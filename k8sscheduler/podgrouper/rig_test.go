package podgrouper_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/test/e2e"
)

var installOnce struct {
	sync.Once
	c   client.Client
	err error
}

// rigClient installs the CRDs into the package's rig (once) and returns a
// direct, uncached client that knows the scheduling types.
func rigClient(t *testing.T) client.Client {
	t.Helper()
	rig := e2e.Rig(t)
	installOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if installOnce.err = crds.Install(ctx, rig.RESTConfig()); installOnce.err != nil {
			return
		}
		// A second install must find everything in place and change nothing.
		if installOnce.err = crds.Install(ctx, rig.RESTConfig()); installOnce.err != nil {
			return
		}
		scheme := runtime.NewScheme()
		if installOnce.err = clientgoscheme.AddToScheme(scheme); installOnce.err != nil {
			return
		}
		if installOnce.err = v1alpha1.AddToScheme(scheme); installOnce.err != nil {
			return
		}
		installOnce.c, installOnce.err = client.New(rig.RESTConfig(), client.Options{Scheme: scheme})
	})
	if installOnce.err != nil {
		t.Fatalf("installing CRDs: %v", installOnce.err)
	}
	return installOnce.c
}

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// The CRDs' OpenAPI schemas and CEL rules reject bad objects with a message
// that names the field and says what is wrong.
func TestCRDValidationRejectsBadObjects(t *testing.T) {
	c := rigClient(t)
	ns := e2e.Namespace(t, e2e.Rig(t))
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	nsMeta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	pg := func(name string, spec v1alpha1.PodGroupSpec) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: nsMeta(name), Spec: spec}
	}
	cases := []struct {
		name string
		obj  client.Object
		want []string // substrings of the API server's message
	}{
		{"queue parent not a name", &v1alpha1.Queue{ObjectMeta: meta("bad-parent"), Spec: v1alpha1.QueueSpec{ParentQueue: "Research"}},
			[]string{"spec.parentQueue", "should match"}},
		{"queue negative priority", &v1alpha1.Queue{ObjectMeta: meta("bad-priority"), Spec: v1alpha1.QueueSpec{Priority: -1}},
			[]string{"spec.priority", "greater than or equal to 0"}},
		{"queue negative gpu quota", &v1alpha1.Queue{ObjectMeta: meta("bad-quota"), Spec: v1alpha1.QueueSpec{
			Quotas: []v1alpha1.PartitionQuota{{Partition: "*", GPU: &v1alpha1.ResourceQuota{Quota: qty("-2")}}}}},
			[]string{"spec.quotas[0].gpu.quota", "quota must not be negative"}},
		{"queue partition listed twice", &v1alpha1.Queue{ObjectMeta: meta("bad-dup"), Spec: v1alpha1.QueueSpec{
			Quotas: []v1alpha1.PartitionQuota{{Partition: "h100"}, {Partition: "h100"}}}},
			[]string{"spec.quotas[1]", "Duplicate value"}},
		{"queue partition not a name", &v1alpha1.Queue{ObjectMeta: meta("bad-partition"), Spec: v1alpha1.QueueSpec{
			Quotas: []v1alpha1.PartitionQuota{{Partition: "h 100"}}}},
			[]string{"spec.quotas[0].partition", "should match"}},
		{"queue negative over-quota weight", &v1alpha1.Queue{ObjectMeta: meta("bad-weight"), Spec: v1alpha1.QueueSpec{
			Quotas: []v1alpha1.PartitionQuota{{Partition: "*", CPU: &v1alpha1.ResourceQuota{OverQuotaWeight: ptr.To[int32](-1)}}}}},
			[]string{"spec.quotas[0].cpu.overQuotaWeight", "greater than or equal to 0"}},
		{"podgroup negative minMember", pg("bad-min", v1alpha1.PodGroupSpec{MinMember: -3, Queue: "nlp"}),
			[]string{"spec.minMember", "greater than or equal to 1"}},
		{"podgroup without queue", pg("no-queue", v1alpha1.PodGroupSpec{MinMember: 2}),
			[]string{"spec.queue", "at least 1 chars long"}},
		{"podgroup unknown preemptibility", pg("bad-preempt", v1alpha1.PodGroupSpec{Queue: "nlp", Preemptibility: "sometimes"}),
			[]string{"spec.preemptibility", `supported values: "preemptible", "non-preemptible"`}},
		{"podgroup gpu fraction of 1.5", pg("bad-fraction", v1alpha1.PodGroupSpec{Queue: "nlp", Members: []v1alpha1.MemberSet{
			{Name: "main", Count: 1, GPUSharing: &v1alpha1.GPUSharing{Fraction: "1.5"}}}}),
			[]string{"spec.members[0].gpuSharing.fraction", "should match"}},
		{"podgroup fraction and memory together", pg("bad-sharing", v1alpha1.PodGroupSpec{Queue: "nlp", Members: []v1alpha1.MemberSet{
			{Name: "main", Count: 1, GPUSharing: &v1alpha1.GPUSharing{Fraction: "0.5", Memory: qty("10Gi")}}}}),
			[]string{"spec.members[0].gpuSharing", "exactly one of fraction and memory"}},
		{"slurm job without user", pg("no-user", v1alpha1.PodGroupSpec{Queue: "nlp", Slurm: &v1alpha1.SlurmJob{Script: "#!/bin/sh"}}),
			[]string{"spec.slurm.user", "at least 1 chars long"}},
		{"slurm dependency misspelt", pg("bad-dep", v1alpha1.PodGroupSpec{Queue: "nlp", Slurm: &v1alpha1.SlurmJob{User: "alice", Dependency: "after-ok:12"}}),
			[]string{"spec.slurm.dependency", "should match"}},
		{"slurm negative time limit", pg("bad-time", v1alpha1.PodGroupSpec{Queue: "nlp", Slurm: &v1alpha1.SlurmJob{User: "alice",
			TimeLimit: &metav1.Duration{Duration: -time.Minute}}}),
			[]string{"spec.slurm.timeLimit", "should match"}},
		{"partition without node selector", &v1alpha1.Partition{ObjectMeta: meta("bad-selector")},
			[]string{"spec.nodeSelector"}},
		{"partition unknown placement", &v1alpha1.Partition{ObjectMeta: meta("bad-placement"), Spec: v1alpha1.PartitionSpec{
			NodeSelector: map[string]string{"a": "b"}, Placement: "roundrobin"}},
			[]string{"spec.placement", `supported values: "binpack", "spread"`}},
		{"partition default time above max", &v1alpha1.Partition{ObjectMeta: meta("bad-times"), Spec: v1alpha1.PartitionSpec{
			NodeSelector: map[string]string{"a": "b"}, DefaultTime: &metav1.Duration{Duration: 2 * time.Hour}, MaxTime: &metav1.Duration{Duration: time.Hour}}},
			[]string{"defaultTime must not exceed maxTime"}},
		{"qos unknown preempt mode", &v1alpha1.QOS{ObjectMeta: meta("bad-mode"), Spec: v1alpha1.QOSSpec{PreemptMode: "kill"}},
			[]string{"spec.preemptMode", `supported values: "requeue", "cancel"`}},
		{"qos negative usage factor", &v1alpha1.QOS{ObjectMeta: meta("bad-factor"), Spec: v1alpha1.QOSSpec{UsageFactor: qty("-0.5")}},
			[]string{"spec.usageFactor", "usageFactor must not be negative"}},
		{"qos negative jobs per user", &v1alpha1.QOS{ObjectMeta: meta("bad-jobs"), Spec: v1alpha1.QOSSpec{Limits: v1alpha1.QOSLimits{MaxJobsPerUser: ptr.To[int32](-1)}}},
			[]string{"spec.limits.maxJobsPerUser", "greater than or equal to 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(context.Background(), tc.obj)
			if err == nil {
				t.Fatalf("created; want rejection mentioning %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error %v, want 422 Invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not mention %q", err.Error(), w)
				}
			}
		})
	}
}

// The example site is accepted as written, and the API server fills in the
// documented defaults.
func TestExampleSiteIsAcceptedWithDefaults(t *testing.T) {
	c := rigClient(t)
	ctx := context.Background()
	objs, err := examples.Objects(examples.Site)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	nlp := &v1alpha1.Queue{}
	if err := c.Get(ctx, client.ObjectKey{Name: "nlp"}, nlp); err != nil {
		t.Fatal(err)
	}
	if q := nlp.Spec.Quotas[0]; q.Partition != "h100" || q.CPU == nil || q.CPU.OverQuotaWeight == nil || *q.CPU.OverQuotaWeight != 1 {
		t.Errorf("nlp's h100 quota %+v, want cpu overQuotaWeight defaulted to 1", q)
	}
	a100 := &v1alpha1.Partition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "a100"}, a100); err != nil {
		t.Fatal(err)
	}
	if a100.Spec.PriorityTier != 1 || a100.Spec.Placement != v1alpha1.PlacementSpread {
		t.Errorf("a100 %+v, want priorityTier defaulted to 1 and spread placement kept", a100.Spec)
	}
	preemptible := &v1alpha1.QOS{}
	if err := c.Get(ctx, client.ObjectKey{Name: "preemptible"}, preemptible); err != nil {
		t.Fatal(err)
	}
	if preemptible.Spec.PreemptMode != v1alpha1.PreemptRequeue || preemptible.Spec.UsageFactor.String() != "500m" {
		t.Errorf("preemptible QOS %+v", preemptible.Spec)
	}
	high := &v1alpha1.QOS{}
	if err := c.Get(ctx, client.ObjectKey{Name: "high"}, high); err != nil {
		t.Fatal(err)
	}
	if high.Spec.PreemptMode != v1alpha1.PreemptRequeue {
		t.Errorf("high QOS preemptMode %q, want defaulted to requeue", high.Spec.PreemptMode)
	}
	// A PodGroup that states no minMember gets 1.
	ns := e2e.Namespace(t, e2e.Rig(t))
	g := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns}, Spec: v1alpha1.PodGroupSpec{Queue: "nlp"}}
	if err := c.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	if g.Spec.MinMember != 1 {
		t.Errorf("minMember %d, want defaulted to 1", g.Spec.MinMember)
	}
}

// A batch/v1 Job with parallelism 3 for Sluice gets one PodGroup with
// minMember 3, owned by the Job, whichever of its pods asks first and however
// often; deleting the Job removes the group.
func TestJobGetsPodGroupWithMinMemberFromParallelism(t *testing.T) {
	c := rigClient(t)
	rig := e2e.Rig(t)
	ns := e2e.Namespace(t, rig)
	ctx := context.Background()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](3),
			Completions: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.KAIQueueLabel: "vision"}},
				Spec: corev1.PodSpec{
					SchedulerName: v1alpha1.DefaultSchedulerName,
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	e2e.WaitFor(t, "the Job's 3 pods", time.Minute, func(ctx context.Context) (bool, error) {
		err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job.Name})
		return err == nil && len(pods.Items) == 3, err
	})
	var first *v1alpha1.PodGroup
	for round := 0; round < 2; round++ { // the second round must find, not create
		for i := range pods.Items {
			pg, err := podgrouper.EnsurePodGroup(ctx, c, &pods.Items[i])
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = pg
			}
			if pg.Name != first.Name || pg.ResourceVersion != first.ResourceVersion {
				t.Errorf("pod %s: group %s@%s, want %s@%s", pods.Items[i].Name, pg.Name, pg.ResourceVersion, first.Name, first.ResourceVersion)
			}
		}
	}
	if first.Spec.MinMember != 3 || first.Spec.Queue != "vision" {
		t.Errorf("PodGroup spec %+v, want minMember 3 in queue vision", first.Spec)
	}
	if len(first.OwnerReferences) != 1 || first.OwnerReferences[0].UID != job.UID {
		t.Errorf("owner references %+v, want the Job %s", first.OwnerReferences, job.UID)
	}
	var groups v1alpha1.PodGroupList
	if err := c.List(ctx, &groups, client.InNamespace(ns)); err != nil || len(groups.Items) != 1 {
		t.Fatalf("%d PodGroups in the namespace (%v), want 1", len(groups.Items), err)
	}
	wantColumns := map[string]any{"Name": first.Name, "Queue": "vision", "Min": float64(3)} // JSON numbers decode as float64
	if got := podGroupTable(t, rig.Client().CoreV1().RESTClient(), ns); !reflect.DeepEqual(got, wantColumns) {
		t.Errorf("kubectl get podgroups shows %v, want %v", got, wantColumns)
	}

	if err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	// The garbage collector notices a new resource on its next discovery
	// resync (every 30 s), hence the generous wait.
	e2e.WaitFor(t, "garbage collection of the Job's PodGroup", 2*time.Minute, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.PodGroup{})
		return apierrors.IsNotFound(err), err
	})
}

// A pod naming its group explicitly gets that group, and a clear error
// while it does not exist; the namespace's queue label is the fallback.
func TestExplicitGroupAnnotationAndNamespaceQueue(t *testing.T) {
	c := rigClient(t)
	ns := e2e.Namespace(t, e2e.Rig(t))
	ctx := context.Background()
	newPod := func(name string, annotations map[string]string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName,
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	explicit := newPod("explicit", map[string]string{v1alpha1.PodGroupAnnotation: "my-gang"})
	_, err := podgrouper.EnsurePodGroup(ctx, c, explicit)
	if err == nil || !strings.Contains(err.Error(), `"my-gang"`) || !strings.Contains(err.Error(), v1alpha1.PodGroupAnnotation) {
		t.Fatalf("error %v, want one naming the missing group and the annotation", err)
	}
	gang := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "my-gang", Namespace: ns},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "nlp"}}
	if err := c.Create(ctx, gang); err != nil {
		t.Fatal(err)
	}
	got, err := podgrouper.EnsurePodGroup(ctx, c, explicit)
	if err != nil || got.UID != gang.UID {
		t.Fatalf("got %v, %v; want the existing my-gang", got, err)
	}

	namespace := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
		t.Fatal(err)
	}
	namespace.Labels[v1alpha1.QueueLabel] = "research"
	if err := c.Update(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	plain := newPod("plain", nil)
	pg, err := podgrouper.EnsurePodGroup(ctx, c, plain)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.Queue != "research" || pg.Spec.MinMember != 1 || pg.OwnerReferences[0].UID != plain.UID {
		t.Errorf("plain pod's group %+v owned by %+v, want queue research, minMember 1, owned by the pod", pg.Spec, pg.OwnerReferences)
	}
	if id, ok := pg.Labels[v1alpha1.JobIDLabel]; ok {
		t.Errorf("a group created without a job id source has job id %q", id)
	}

	// With the server's job id source, the group is a job: it gets the next id once,
	// and a second pod of the same group takes none.
	next := uint32(4100)
	ids := func(context.Context) (uint32, error) { next++; return next, nil }
	numbered := newPod("numbered", nil)
	pg, err = podgrouper.EnsurePodGroupWithID(ctx, c, numbered, ids)
	if err != nil {
		t.Fatal(err)
	}
	again, err := podgrouper.EnsurePodGroupWithID(ctx, c, numbered, ids)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Labels[v1alpha1.JobIDLabel] != "4101" || again.Labels[v1alpha1.JobIDLabel] != "4101" || next != 4101 {
		t.Errorf("job ids %q then %q (source at %d), want 4101 taken once", pg.Labels[v1alpha1.JobIDLabel], again.Labels[v1alpha1.JobIDLabel], next)
	}

	// A group the user wrote is a job too: the first of its pods numbers it, the next
	// finds the id, and the group is otherwise as written.
	second := newPod("explicit-2", map[string]string{v1alpha1.PodGroupAnnotation: "my-gang"})
	for _, p := range []*corev1.Pod{explicit, second} {
		if got, err = podgrouper.EnsurePodGroupWithID(ctx, c, p, ids); err != nil {
			t.Fatal(err)
		}
	}
	var stored v1alpha1.PodGroup
	if err := c.Get(ctx, client.ObjectKeyFromObject(gang), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Labels[v1alpha1.JobIDLabel] != "4102" || got.Labels[v1alpha1.JobIDLabel] != "4102" || next != 4102 ||
		stored.Spec.MinMember != 2 || stored.Spec.Queue != "nlp" {
		t.Errorf("user-written group after two pods: labels %v, spec %+v (source at %d); want job id 4102 taken once, spec as written",
			stored.Labels, stored.Spec, next)
	}
}

// podGroupTable reads the namespace's PodGroups the way kubectl get does (as
// a server-side Table) and returns the Name, Queue and Min cells of its one
// row, so the printer columns are checked as a user sees them.
func podGroupTable(t *testing.T, rc rest.Interface, ns string) map[string]any {
	t.Helper()
	raw, err := rc.Get().AbsPath("/apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "namespaces", ns, "podgroups").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	cells := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		switch col.Name {
		case "Name", "Queue", "Min":
			cells[col.Name] = table.Rows[0].Cells[i]
		}
	}
	return cells
}
