package bridge

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// Scenario files (testdata/scenarios/*.yaml) describe a cluster in a compact form: whole GPUs
// and cores instead of milli units, node and job shorthands; the loader turns them into a
// Snapshot. Expectations are checked exactly for binds and evictions (no other job may bind
// or be evicted) and by code and reason substring for pending jobs.
type scenario struct {
	Description string      `yaml:"description"`
	Now         time.Time   `yaml:"now"`
	Config      Config      `yaml:"config"`
	Partitions  []Partition `yaml:"partitions"`
	Nodes       []scNode    `yaml:"nodes"`
	Queues      []scQueue   `yaml:"queues"`
	QOS         []scQOS     `yaml:"qos"`
	Jobs        []scJob     `yaml:"jobs"`
	Usage       []scUsage   `yaml:"usage"`
	NodeSets    []NodeSet   `yaml:"nodeSets"`
	NodeScores  []NodeScore `yaml:"nodeScores"`
	// AdvanceReservations are given relative to now.
	AdvanceReservations []scResv `yaml:"advanceReservations"`
	Expect              scExpect `yaml:"expect"`
}

// scResv is an advance reservation starting StartsIn from now (negative: that long ago) and
// lasting Lasts.
type scResv struct {
	AdvanceReservation `yaml:",inline"`
	StartsIn           time.Duration `yaml:"startsIn"`
	Lasts              time.Duration `yaml:"lasts"`
}

type scNode struct {
	Name          string            `yaml:"name"`
	Count         int               `yaml:"count"` // name-0 ... name-(count-1)
	Partition     string            `yaml:"partition"`
	GPUs          int32             `yaml:"gpus"`
	GPUMemory     int64             `yaml:"gpuMemory"` // MiB per GPU, default 81920
	CPU           int64             `yaml:"cpu"`       // cores, default 64
	Memory        int64             `yaml:"memory"`    // GiB, default 512
	Unschedulable bool              `yaml:"unschedulable"`
	Unhealthy     []int32           `yaml:"unhealthy"`
	MIG           bool              `yaml:"mig"`
	Labels        map[string]string `yaml:"labels"`
	Extended      []Quantity        `yaml:"extended"`
	Yielding      []string          `yaml:"yielding"`
	Foreign       []ForeignTask     `yaml:"foreign"`
	Held          []int32           `yaml:"held"` // devices a reservation holds for their sharers (GPUTaken.Hold)
}

type scQuota struct {
	Quota  float64 `yaml:"quota"`
	Limit  float64 `yaml:"limit"`
	Weight float64 `yaml:"weight"`
}

type scQueue struct {
	Name     string `yaml:"name"`
	Parent   string `yaml:"parent"`
	Priority int32  `yaml:"priority"`
	// GPU quotas per partition, in GPUs; CPU quotas in cores.
	GPU map[string]scQuota `yaml:"gpu"`
	CPU map[string]scQuota `yaml:"cpu"`
}

type scQOS struct {
	Name           string        `yaml:"name"`
	Priority       int32         `yaml:"priority"`
	Preemptible    bool          `yaml:"preemptible"`
	MaxGPUsPerUser float64       `yaml:"maxGPUsPerUser"`
	MaxJobsPerUser int32         `yaml:"maxJobsPerUser"`
	GrpGPUs        float64       `yaml:"grpGPUs"`
	MaxWall        time.Duration `yaml:"maxWall"`
}

type scGroup struct {
	Name      string     `yaml:"name"`
	Tasks     int32      `yaml:"tasks"`     // default 1
	GPUs      int32      `yaml:"gpus"`      // whole GPUs per task
	Fraction  float64    `yaml:"fraction"`  // of one GPU (of each of Devices when set)
	Devices   int32      `yaml:"devices"`   // with Fraction: the same fraction on N GPUs
	GPUMemory int64      `yaml:"gpuMemory"` // MiB of one GPU
	CPU       float64    `yaml:"cpu"`       // cores, default 1
	Memory    float64    `yaml:"memory"`    // GiB, default 4
	Extended  []Quantity `yaml:"extended"`
	Kind      GPUKind    `yaml:"kind"` // overrides the kind derived from the fields above
	NodeSet   string     `yaml:"nodeSet"`
	NodeScore string     `yaml:"nodeScore"`
}

type scRunning struct {
	Name     string  `yaml:"name"`
	Group    string  `yaml:"group"`
	Node     string  `yaml:"node"`
	GPUs     []int32 `yaml:"gpus"`
	Fraction float64 `yaml:"fraction"`
	Started  int     `yaml:"started"` // minutes before now
}

type scJob struct {
	ID           string            `yaml:"id"`
	Copies       int               `yaml:"copies"` // id-0 ... id-(copies-1)
	Queue        string            `yaml:"queue"`
	Partition    string            `yaml:"partition"`
	User         string            `yaml:"user"`
	QOS          string            `yaml:"qos"`
	Priority     int32             `yaml:"priority"`
	Preemptible  bool              `yaml:"preemptible"`
	MinMember    int32             `yaml:"minMember"`
	Submitted    int               `yaml:"submitted"` // minutes before now
	TimeLimit    time.Duration     `yaml:"timeLimit"`
	Selector     map[string]string `yaml:"selector"`
	Labels       map[string]string `yaml:"labels"`
	Scope        string            `yaml:"scope"`
	StaleFor     time.Duration     `yaml:"staleFor"`
	Placement    Placement         `yaml:"placement"`
	Alternatives []Alternative     `yaml:"alternatives"`
	scGroup      `yaml:",inline"`
	Groups       []scGroup   `yaml:"groups"`
	Running      []scRunning `yaml:"running"`
	Reservation  string      `yaml:"reservation"`
}

type scUsage struct {
	Queue     string  `yaml:"queue"`
	Partition string  `yaml:"partition"`
	GPU       float64 `yaml:"gpu"`
}

type scExpect struct {
	// AnyBinds skips the exact check of binds (scenarios about shares and reasons).
	AnyBinds     bool          `yaml:"anyBinds"`
	Binds        []scBind      `yaml:"binds"`
	Evictions    []scEviction  `yaml:"evictions"`
	Pending      []scPending   `yaml:"pending"`
	Shares       []scShare     `yaml:"shares"`
	Reservations []Reservation `yaml:"reservations"`
	Problems     []string      `yaml:"problems"` // substrings, one per expected problem
	Yields       []Yield       `yaml:"yields"`   // exact, in order
}

type scBind struct {
	Job      string  `yaml:"job"`
	Node     string  `yaml:"node"`
	Count    int     `yaml:"count"` // binds of the job on the node, default 1
	GPUs     []int32 `yaml:"gpus"`
	Fraction float64 `yaml:"fraction"`
	Memory   int64   `yaml:"gpuMemory"` // MiB granted per device
	After    bool    `yaml:"after"`     // the bind waits (AfterEvictions)
}

type scEviction struct {
	Job  string       `yaml:"job"`
	Kind EvictionKind `yaml:"kind"`
	For  string       `yaml:"for"`
}

type scPending struct {
	Job    string `yaml:"job"`
	Code   string `yaml:"code"`
	Reason string `yaml:"reason"`
}

type scShare struct {
	Queue     string   `yaml:"queue"`
	Partition string   `yaml:"partition"`
	FairGPU   *float64 `yaml:"fairGPU"`
	AllocGPU  *float64 `yaml:"allocGPU"`
}

const gib = 1 << 30

func milli(v float64) int64 { return int64(v*1000 + 0.5) }

func (sc *scenario) snapshot() *Snapshot {
	if sc.Now.IsZero() {
		sc.Now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	}
	s := &Snapshot{Now: sc.Now, Config: sc.Config, Partitions: sc.Partitions, NodeSets: sc.NodeSets, NodeScores: sc.NodeScores}
	if len(s.Partitions) == 0 {
		s.Partitions = []Partition{{Name: "gpu", Placement: Binpack}}
	}
	for _, n := range sc.Nodes {
		names := []string{n.Name}
		if n.Count > 0 {
			names = names[:0]
			for i := range n.Count {
				names = append(names, fmt.Sprintf("%s-%d", n.Name, i))
			}
		}
		for _, name := range names {
			s.Nodes = append(s.Nodes, n.node(name, s.Partitions[0].Name))
		}
	}
	for _, q := range sc.Queues {
		s.Queues = append(s.Queues, q.queue())
	}
	for _, q := range sc.QOS {
		s.QOS = append(s.QOS, QOS{Name: q.Name, Priority: q.Priority, Preemptible: q.Preemptible,
			MaxGPUsPerUser: milli(q.MaxGPUsPerUser), MaxJobsPerUser: q.MaxJobsPerUser,
			GrpTRES: Resources{GPUMilli: milli(q.GrpGPUs)}, MaxWall: q.MaxWall})
	}
	for _, j := range sc.Jobs {
		if j.Copies == 0 {
			s.Jobs = append(s.Jobs, j.job(sc.Now, s.Partitions[0].Name))
		}
		for i := range j.Copies {
			c := j
			c.ID = fmt.Sprintf("%s-%d", j.ID, i)
			s.Jobs = append(s.Jobs, c.job(sc.Now, s.Partitions[0].Name))
		}
	}
	for _, r := range sc.AdvanceReservations {
		ar := r.AdvanceReservation
		ar.Start = sc.Now.Add(r.StartsIn)
		ar.End = ar.Start.Add(r.Lasts)
		s.AdvanceReservations = append(s.AdvanceReservations, ar)
	}
	for _, u := range sc.Usage {
		p := u.Partition
		if p == "" {
			p = s.Partitions[0].Name
		}
		s.Usage = append(s.Usage, QueueUsage{Queue: u.Queue, Partition: p, Usage: Resources{GPUMilli: milli(u.GPU)}})
	}
	return s
}

func (n scNode) node(name, defaultPartition string) Node {
	nd := Node{Name: name, Partition: n.Partition, Labels: n.Labels, Unschedulable: n.Unschedulable, Yielding: n.Yielding,
		Foreign: n.Foreign}
	if nd.Partition == "" {
		nd.Partition = defaultPartition
	}
	cpu, mem, gmem := n.CPU, n.Memory, n.GPUMemory
	if cpu == 0 {
		cpu = 64
	}
	if mem == 0 {
		mem = 512
	}
	if gmem == 0 {
		gmem = 81920
	}
	nd.Allocatable = Resources{CPUMilli: cpu * 1000, MemoryBytes: mem * gib, Extended: n.Extended}
	for i := range n.GPUs {
		nd.GPUs = append(nd.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", name, i), MemoryMiB: gmem,
			Model: "H100", MIG: n.MIG, Unhealthy: slices.Contains(n.Unhealthy, i)})
		if slices.Contains(n.Held, i) {
			nd.GPUs[i].Taken = []GPUTaken{{Task: fmt.Sprintf("hold/%s/%d", name, i), Hold: true}}
		}
	}
	return nd
}

func (q scQueue) queue() Queue {
	out := Queue{Name: q.Name, Parent: q.Parent, Priority: q.Priority}
	parts := map[string]bool{}
	for p := range q.GPU {
		parts[p] = true
	}
	for p := range q.CPU {
		parts[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		g, c := q.GPU[p], q.CPU[p]
		out.Quotas = append(out.Quotas, PartitionQuota{Partition: p,
			GPU: ResourceQuota{Quota: milli(g.Quota), Limit: milli(g.Limit), OverQuotaWeight: g.Weight},
			CPU: ResourceQuota{Quota: milli(c.Quota), Limit: milli(c.Limit), OverQuotaWeight: c.Weight}})
	}
	return out
}

func (g scGroup) group(name string) TaskGroup {
	tg := TaskGroup{Name: name, Count: g.Tasks, NodeSet: g.NodeSet, NodeScore: g.NodeScore}
	if g.Name != "" {
		tg.Name = g.Name
	}
	if tg.Count == 0 {
		tg.Count = 1
	}
	cpu, mem := g.CPU, g.Memory
	if cpu == 0 {
		cpu = 1
	}
	if mem == 0 {
		mem = 4
	}
	tg.Request = Resources{CPUMilli: milli(cpu), MemoryBytes: int64(mem * gib), Extended: g.Extended}
	switch {
	case g.GPUs > 0:
		tg.GPU = GPURequest{Kind: GPUWhole, Devices: g.GPUs}
	case g.Fraction > 0 && g.Devices > 0:
		tg.GPU = GPURequest{Kind: GPUMultiFraction, Devices: g.Devices, Milli: int32(milli(g.Fraction))}
	case g.Fraction > 0:
		tg.GPU = GPURequest{Kind: GPUFraction, Milli: int32(milli(g.Fraction))}
	case g.GPUMemory > 0:
		tg.GPU = GPURequest{Kind: GPUMemory, MemoryMiB: g.GPUMemory}
	}
	if g.Kind != "" {
		tg.GPU.Kind = g.Kind
	}
	return tg
}

func (j scJob) job(now time.Time, defaultPartition string) Job {
	out := Job{ID: j.ID, Queue: j.Queue, Partition: j.Partition, User: j.User, QOS: j.QOS, Priority: j.Priority,
		Preemptible: j.Preemptible, MinMember: j.MinMember, TimeLimit: j.TimeLimit, NodeSelector: j.Selector, Labels: j.Labels, Scope: j.Scope, Placement: j.Placement,
		Alternatives: j.Alternatives, SubmitTime: now.Add(-time.Duration(j.Submitted) * time.Minute), Reservation: j.Reservation}
	if out.Partition == "" {
		out.Partition = defaultPartition
	}
	if out.User == "" {
		out.User = "alice"
	}
	if j.StaleFor > 0 {
		out.StaleSince = now.Add(-j.StaleFor)
	}
	if len(j.Groups) == 0 {
		out.Groups = []TaskGroup{j.scGroup.group("main")}
	}
	for i, g := range j.Groups {
		out.Groups = append(out.Groups, g.group(fmt.Sprintf("g%d", i)))
	}
	for i, r := range j.Running {
		name := r.Name
		if name == "" {
			name = fmt.Sprintf("%s-%d", j.ID, i)
		}
		out.Running = append(out.Running, RunningTask{Name: name, Group: r.Group, Node: r.Node, GPUs: r.GPUs,
			GPUMilli: int32(milli(r.Fraction)), Start: now.Add(-time.Duration(r.Started) * time.Minute)})
	}
	return out
}

func loadScenario(t *testing.T, path string) *scenario {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &sc
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			sc := loadScenario(t, f)
			s := sc.snapshot()
			d := Schedule(s)
			checkExpect(t, sc.Expect, d)
			checkInvariants(t, s, d)
			if t.Failed() {
				t.Logf("decisions:\n%s", dump(d))
			}
		})
	}
}
