package scheduler

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func testPod(name string, gpus string, ann map[string]string, node string) *corev1.Pod {
	a := map[string]string{v1alpha1.PodGroupAnnotation: "pg"}
	for k, v := range ann {
		a[k] = v
	}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	if gpus != "" {
		req[v1alpha1.GPUResource] = resource.MustParse(gpus)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: a, Labels: map[string]string{v1alpha1.KAIQueueLabel: "kai"}},
		Spec: corev1.PodSpec{SchedulerName: "sluice", NodeName: node,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
}

func TestBuildFromPods(t *testing.T) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 3, Queue: "q"}}
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		assumed     []string
		wantInclude bool
		wantBlocked string
		wantGroups  int
		wantPending int
		wantRunning int
	}{
		{name: "fewer pods than minMember", pods: []*corev1.Pod{testPod("a", "8", nil, ""), testPod("b", "8", nil, "")},
			wantBlocked: ReasonWaitingForPods},
		{name: "a started gang whose other pods finished still holds its nodes", pods: []*corev1.Pod{testPod("a", "8", nil, "n1")},
			wantInclude: true, wantGroups: 1, wantRunning: 1},
		{name: "gang of identical pods", pods: []*corev1.Pod{testPod("a", "8", nil, ""), testPod("b", "8", nil, ""), testPod("c", "8", nil, "")},
			wantInclude: true, wantGroups: 1, wantPending: 3},
		{name: "bound and assumed pods run", pods: []*corev1.Pod{testPod("a", "8", nil, "n1"), testPod("b", "8", nil, ""), testPod("c", "8", nil, "")},
			assumed: []string{"b"}, wantInclude: true, wantGroups: 1, wantPending: 1, wantRunning: 2},
		{name: "two shapes, two groups", pods: []*corev1.Pod{testPod("a", "1", nil, ""), testPod("b", "", map[string]string{"gpu-fraction": "0.5"}, ""), testPod("c", "1", nil, "")},
			wantInclude: true, wantGroups: 2, wantPending: 3},
		{name: "a bad pod blocks the gang", pods: []*corev1.Pod{testPod("a", "1", nil, ""), testPod("b", "1", map[string]string{"gpu-fraction": "0.5"}, ""), testPod("c", "1", nil, "")},
			wantBlocked: bridge.ReasonBadConstraints},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.setPodGroup(pg)
			for _, p := range tt.pods {
				c.setPod(podKey(p.Namespace, p.Name), convertPod(p, "sluice"))
			}
			g := c.groups["ns/pg"]
			g.assumed = map[string]bridge.Bind{}
			for _, a := range tt.assumed {
				g.assumed[a] = bridge.Bind{Job: "ns/pg", Group: "g0", Task: a, Node: "n2"}
			}
			g.build("def", true, nil)
			if g.include != tt.wantInclude {
				t.Fatalf("include = %v, want %v (blocked %+v)", g.include, tt.wantInclude, g.blocked)
			}
			if tt.wantBlocked != "" {
				if g.blocked == nil || g.blocked.Code != tt.wantBlocked {
					t.Fatalf("blocked = %+v, want code %s", g.blocked, tt.wantBlocked)
				}
				return
			}
			j := g.job
			if j.Partition != "def" || j.Queue != "q" || j.MinMember != min(3, int32(len(tt.pods))) {
				t.Errorf("job = %s in %s/%s minMember %d", j.ID, j.Queue, j.Partition, j.MinMember)
			}
			pending := 0
			for _, tg := range j.Groups {
				pending += len(tg.PendingTasks)
			}
			if len(j.Groups) != tt.wantGroups || pending != tt.wantPending || len(j.Running) != tt.wantRunning {
				t.Errorf("groups %d pending %d running %d; want %d %d %d", len(j.Groups), pending, len(j.Running),
					tt.wantGroups, tt.wantPending, tt.wantRunning)
			}
		})
	}
}

func TestBuildFromMembers(t *testing.T) {
	members := []v1alpha1.MemberSet{{Name: "node", Count: 2, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("4")}}}
	tests := []struct {
		name      string
		phase     v1alpha1.PodGroupPhase
		factory   bool
		bound     int
		include   bool
		blocked   string
		wantCount int32
	}{
		{name: "pending Slurm job", factory: true, include: true, wantCount: 2},
		{name: "no factory", factory: false, blocked: ReasonNoPodFactory},
		{name: "started job is never placed again", phase: v1alpha1.PodGroupRunning, factory: true, bound: 1, include: true, wantCount: 1},
		// Running with no pod at all: its creates failed or its leader died before making
		// them (nevercreated_test.go); placed again rather than left Running for good.
		{name: "Running job with no pods", phase: v1alpha1.PodGroupRunning, factory: true, include: true, wantCount: 2},
		{name: "finished job", phase: v1alpha1.PodGroupSucceeded, factory: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"},
				Spec:   v1alpha1.PodGroupSpec{MinMember: 2, Queue: "q", Partition: "h100", Members: members, Slurm: &v1alpha1.SlurmJob{User: "alice"}},
				Status: v1alpha1.PodGroupStatus{Phase: tt.phase}}
			c.setPodGroup(pg)
			for i := range tt.bound {
				p := testPod(string(rune('a'+i)), "4", map[string]string{v1alpha1.TaskGroupAnnotation: "node"}, "n1")
				c.setPod(podKey("ns", p.Name), convertPod(p, "sluice"))
			}
			g := c.groups["ns/pg"]
			g.build("", tt.factory, nil)
			if g.include != tt.include {
				t.Fatalf("include = %v, want %v (blocked %+v)", g.include, tt.include, g.blocked)
			}
			if tt.blocked != "" && (g.blocked == nil || g.blocked.Code != tt.blocked) {
				t.Fatalf("blocked = %+v, want %s", g.blocked, tt.blocked)
			}
			if !tt.include {
				return
			}
			tg := g.job.Groups[0]
			if tg.Count != tt.wantCount || tg.GPU != (bridge.GPURequest{Kind: bridge.GPUWhole, Devices: 4}) || g.job.User != "alice" {
				t.Errorf("group = %+v, user %q; want count %d of 4 whole GPUs for alice", tg, g.job.User, tt.wantCount)
			}
		})
	}
}

func TestForeignPodsUseTheirNode(t *testing.T) {
	c := newCache()
	setTestNode(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1alpha1.PartitionLabel: "p"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), v1alpha1.GPUResource: resource.MustParse("4")}}})
	other := testPod("other", "2", nil, "n1")
	other.Spec.SchedulerName = "default-scheduler"
	c.setPod("ns/other", convertPod(other, "sluice"))
	snap, _ := c.snapshot(metav1.Now().Time)
	if len(snap.Nodes) != 1 || len(snap.Partitions) != 1 || snap.Partitions[0].Name != "p" {
		t.Fatalf("snapshot nodes %+v partitions %+v", snap.Nodes, snap.Partitions)
	}
	got := snap.Nodes[0]
	taken := 0
	for _, g := range got.GPUs {
		taken += len(g.Taken)
	}
	if got.Used.CPUMilli != 1000 || taken != 2 {
		t.Errorf("Used = %+v with %d GPUs taken, want 1 CPU and 2 GPUs", got.Used, taken)
	}
	c.setPod("ns/other", nil)
	snap, _ = c.snapshot(metav1.Now().Time)
	if snap.Nodes[0].Used.CPUMilli != 0 || len(snap.Nodes[0].GPUs) != 0 {
		t.Errorf("after the pod left: %+v", snap.Nodes[0])
	}
}

// Pods of a group the snapshot has no job for still hold their node.
func TestOrphanPodsHoldTheirNode(t *testing.T) {
	c := newCache()
	setTestNode(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1alpha1.PartitionLabel: "p"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), v1alpha1.GPUResource: resource.MustParse("4")}}})
	p := testPod("a", "4", nil, "n1") // names PodGroup "pg", which does not exist
	c.setPod("ns/a", convertPod(p, "sluice"))
	snap, _ := c.snapshot(metav1.Now().Time)
	taken := 0
	for _, g := range snap.Nodes[0].GPUs {
		taken += len(g.Taken)
	}
	if len(snap.Jobs) != 0 || taken != 4 || snap.Nodes[0].Used.CPUMilli != 1000 {
		t.Errorf("jobs %d, %d GPUs taken, used %+v; want no job and the pod's 4 GPUs and 1 CPU used", len(snap.Jobs), taken, snap.Nodes[0].Used)
	}
	if len(c.nodes["n1"].built.GPUs) != 0 {
		t.Error("the orphan's usage leaked into the cached node")
	}
}

// An operator's priority (sbatch --priority, scontrol update priority=N) and a job's nice
// (taken off) reach the core.
func TestBuildReadsOperatorPriority(t *testing.T) {
	for _, tt := range []struct {
		annotation, nice string
		want             int32
	}{{"", "", 0}, {"500", "", 500}, {"-3", "", -3}, {"lots", "", 0},
		{"", "100", -100}, {"500", "-20", 520}, {"", "2147483645", -2147483645},
		{"2147483647", "-2147483645", math.MaxInt32}, {"-2147483648", "2147483645", math.MinInt32}} {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}}
		pg.Annotations = map[string]string{}
		if tt.annotation != "" {
			pg.Annotations[v1alpha1.PriorityAnnotation] = tt.annotation
		}
		if tt.nice != "" {
			pg.Annotations[v1alpha1.NiceAnnotation] = tt.nice
		}
		c := newCache()
		c.setPodGroup(pg)
		p := testPod("a", "1", nil, "")
		c.setPod(podKey(p.Namespace, p.Name), convertPod(p, "sluice"))
		g := c.groups["ns/pg"]
		g.build("def", true, nil)
		if !g.include || g.job.Priority != tt.want {
			t.Errorf("priority %q, nice %q: job priority %d (included %v), want %d", tt.annotation, tt.nice, g.job.Priority, g.include, tt.want)
		}
	}
}

// setTestNode converts a node and puts it in the cache, as the node informer does.
func setTestNode(c *cache, n *corev1.Node) {
	bn, _ := convertNode(n)
	c.setNode(bn, n)
}

// KAI's rule: a PriorityClass worth 100 or more (build 100, inference 125) makes a group
// non-preemptible; below (train 50, build-preemptible 75) it stays preemptible; a stated
// preemptibility or a QOS decides for itself.
func TestPriorityClassValueDecidesPreemptibility(t *testing.T) {
	for _, tt := range []struct {
		name     string
		priority int32
		stated   v1alpha1.Preemptibility
		qos      string
		want     bool
	}{
		{"train", 50, "", "", true},
		{"build-preemptible", 75, "", "", true},
		{"build", 100, "", "", false},
		{"inference", 125, "", "", false},
		{"inference, stated preemptible", 125, v1alpha1.Preemptible, "", true},
		{"train, stated non-preemptible", 50, v1alpha1.NonPreemptible, "", false},
		{"inference with a QOS: the QOS decides", 125, "", "normal", false},
	} {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"},
			Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q", Preemptibility: tt.stated, QOS: tt.qos}}
		c := newCache()
		c.setPodGroup(pg)
		p := testPod("a", "1", nil, "")
		p.Spec.Priority = &tt.priority
		c.setPod(podKey(p.Namespace, p.Name), convertPod(p, "sluice"))
		g := c.groups["ns/pg"]
		g.build("def", true, nil)
		if !g.include || g.job.Preemptible != tt.want {
			t.Errorf("%s (priority %d): preemptible %v (included %v), want %v", tt.name, tt.priority, g.job.Preemptible, g.include, tt.want)
		}
	}
}

// A confirmed bind leaves no empty map of binds behind on its group: every group ever
// bound would keep one.
func TestConfirmedBindLeavesNoAssumedMap(t *testing.T) {
	c := newCache()
	c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
	c.setPod("ns/a", convertPod(testPod("a", "1", map[string]string{v1alpha1.PodGroupAnnotation: "pg"}, ""), "sluice"))
	g := c.groups["ns/pg"]
	g.assumed = map[string]bridge.Bind{"a": {Job: "ns/pg", Task: "a", Node: "n1"}}
	c.setPod("ns/a", convertPod(testPod("a", "1", map[string]string{v1alpha1.PodGroupAnnotation: "pg"}, "n1"), "sluice"))
	if g.assumed != nil {
		t.Errorf("assumed binds after the pod showed up bound: %v, want none (nil)", g.assumed)
	}
}
