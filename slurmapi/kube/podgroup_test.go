package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// siteCatalog is the catalogue of the seed site `sluice dev` applies.
func siteCatalog(t *testing.T) *slurmapi.Catalog {
	t.Helper()
	objs, err := examples.Objects(examples.Site)
	if err != nil {
		t.Fatal(err)
	}
	var parts []v1alpha1.Partition
	var queues []v1alpha1.Queue
	var qos []v1alpha1.QOS
	for _, o := range objs {
		switch v := o.(type) {
		case *v1alpha1.Partition:
			parts = append(parts, *v)
		case *v1alpha1.Queue:
			queues = append(queues, *v)
		case *v1alpha1.QOS:
			qos = append(qos, *v)
		}
	}
	return CatalogFrom(parts, queues, qos)
}

func submit(t *testing.T, cat *slurmapi.Catalog, user, body string) (*slurmapi.JobDesc, *slurmapi.Error) {
	t.Helper()
	d, _, err := slurmapi.DecodeSubmission([]byte(body), user, cat, slurmapi.SubmitPolicy{ShardsPerGPU: 8}, time.Now())
	return d, err
}

func TestSiteCatalog(t *testing.T) {
	cat := siteCatalog(t)
	if cat.DefaultPartition != "h100" || cat.DefaultAccount["alice"] != "nlp" || cat.DefaultAccount["bob"] != "vision" {
		t.Fatalf("catalog defaults: partition %q, alice %q, bob %q", cat.DefaultPartition, cat.DefaultAccount["alice"], cat.DefaultAccount["bob"])
	}
	cases := []struct {
		name, user, body, wantErr string
	}{
		{"alice 2x8 h100", "alice", `{"script":"#!/bin/bash\n#SBATCH -N2 --gres=gpu:h100:8\n","job":{}}`, ""},
		{"bob on a100 by model", "bob", `{"script":"#!/bin/bash\n","job":{"partition":"a100","tres_per_node":"gres/gpu:a100:1"}}`, ""},
		{"nobody in default (no users listed)", "carol", `{"script":"#!/bin/bash\n","job":{"account":"default"}}`, "not associated"},
		{"alice in default", "alice", `{"script":"#!/bin/bash\n","job":{"account":"default"}}`, "not associated"},
		{"alice's preemptible", "alice", `{"script":"#!/bin/bash\n","job":{"qos":"preemptible"}}`, ""},
		{"alice not given high", "alice", `{"script":"#!/bin/bash\n","job":{"qos":"high"}}`, "may not use QOS \"high\""},
		{"bob not given high", "bob", `{"script":"#!/bin/bash\n","job":{"partition":"a100","qos":"high"}}`, "may not use QOS \"high\""},
		{"bob not in nlp", "bob", `{"script":"#!/bin/bash\n","job":{"account":"nlp"}}`, "not associated"},
		{"no jobs on a parent queue", "alice", `{"script":"#!/bin/bash\n","job":{"account":"research"}}`, "not associated"},
		{"type mismatch", "alice", `{"script":"#!/bin/bash\n","job":{"tres_per_node":"gres/gpu:a100:1"}}`, "H100-80GB"},
		{"over partition max time", "bob", `{"script":"#!/bin/bash\n#SBATCH -t 30:00:00\n","job":{"partition":"a100","qos":"normal"}}`, "exceeds partition"},
		{"over the default QOS's MaxWall", "alice", `{"script":"#!/bin/bash\n#SBATCH -t 3-00:00:00\n","job":{}}`, "MaxWall"},
	}
	for _, tc := range cases {
		d, err := submit(t, cat, tc.user, tc.body)
		if err == nil && !strings.Contains(tc.body, `"qos"`) && d.QOS != "preemptible" {
			t.Errorf("%s: QOS %q, want the association's default preemptible", tc.name, d.QOS)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Description, tc.wantErr)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestPodGroupFor(t *testing.T) {
	cat := siteCatalog(t)
	d, err := submit(t, cat, "alice", `{"script":"#!/bin/bash\n#SBATCH -J train -N2 --ntasks-per-node=8 -c 2 --gres=gpu:h100:8 --mem=64G\n#SBATCH --requeue -t 2:00:00 -o out-%j.txt\nsrun x\n","job":{"environment":["A=1"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	pg := PodGroupFor(d, 42)
	if pg.Name != "job-42" || pg.Namespace != "slurm-nlp" || pg.Labels[v1alpha1.JobIDLabel] != "42" || pg.Labels[v1alpha1.QueueLabel] != "nlp" {
		t.Errorf("metadata %+v", pg.ObjectMeta)
	}
	if pg.Spec.MinMember != 2 || pg.Spec.Queue != "nlp" || pg.Spec.Partition != "h100" || len(pg.Spec.Members) != 1 || pg.Spec.Members[0].Count != 2 {
		t.Errorf("gang %+v", pg.Spec)
	}
	r := pg.Spec.Members[0].Resources
	cpu, mem, gpu := r[corev1.ResourceCPU], r[corev1.ResourceMemory], r[v1alpha1.GPUResource]
	if cpu.Value() != 16 || mem.Value() != 64<<30 || gpu.Value() != 8 {
		t.Errorf("per-node resources cpu %s mem %s gpu %s", cpu.String(), mem.String(), gpu.String())
	}
	s := pg.Spec.Slurm
	if s.Name != "train" || s.User != "alice" || s.TimeLimit.Duration != 2*time.Hour || !s.Requeue || s.StandardOutput != "out-%j.txt" ||
		s.Environment["A"] != "1" || s.Image == "" || *s.TasksPerNode != 8 {
		t.Errorf("slurm %+v", s)
	}
}

func TestPodGroupForGPUVariants(t *testing.T) {
	cat := siteCatalog(t)
	cases := []struct {
		name, body   string
		gpus         int64
		fraction     string
		memPerNodeGi int64
	}{
		{"per task", `{"script":"#!/bin/sh\n#SBATCH -n 4 --gpus-per-task=1 --mem-per-gpu=10G\n","job":{}}`, 4, "", 40},
		{"per job over 2 nodes", `{"script":"#!/bin/sh\n#SBATCH -N 2 --gpus=6\n","job":{}}`, 3, "", 0},
		{"shard", `{"script":"#!/bin/sh\n#SBATCH --gres=shard:2\n","job":{}}`, 0, "0.25", 0},
		{"mps", `{"script":"#!/bin/sh\n#SBATCH --gres=mps:30 --mem-per-cpu=1G -c 4\n","job":{}}`, 0, "0.3", 4},
	}
	for _, tc := range cases {
		d, err := submit(t, cat, "alice", tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := PodGroupFor(d, 1).Spec.Members[0]
		gpu := m.Resources[v1alpha1.GPUResource]
		mem := m.Resources[corev1.ResourceMemory]
		if gpu.Value() != tc.gpus || mem.Value() != tc.memPerNodeGi<<30 {
			t.Errorf("%s: gpus %s mem %s", tc.name, gpu.String(), mem.String())
		}
		got := ""
		if m.GPUSharing != nil {
			got = m.GPUSharing.Fraction
		}
		if got != tc.fraction {
			t.Errorf("%s: fraction %q, want %q", tc.name, got, tc.fraction)
		}
	}
}

func TestJobFromPodGroupRoundTrip(t *testing.T) {
	cat := siteCatalog(t)
	d, err := submit(t, cat, "alice", `{"script":"#!/bin/bash\n#SBATCH -J train -N2 --gres=gpu:h100:8 --array=0-3%2 -d afterok:7\n#SBATCH -C ib|h100 -w n[1-2] -x n3 --exclusive --switches=1\n","job":{"environment":["B=2","A=1"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	pg := PodGroupFor(d, 42)
	pg.CreationTimestamp = metav1.NewTime(time.Unix(1000, 0))
	j, jerr := JobFromPodGroup(pg)
	if jerr != nil {
		t.Fatal(jerr)
	}
	want := *d
	want.Environment = []string{"A=1", "B=2"}
	// The GPU request comes back per node, with its type.
	want.GPUs = slurmapi.GPURequest{Type: "h100", PerNode: 8}
	if !reflect.DeepEqual(j.Desc, want) {
		t.Errorf("round trip changed the job:\n got %+v\nwant %+v", j.Desc, want)
	}
	if j.ID != 42 || j.State[0] != "PENDING" || j.TRESReq != "cpu=2,node=2,billing=2,gres/gpu=16,gres/gpu:h100=16" || !j.SubmitTime.Equal(time.Unix(1000, 0)) {
		t.Errorf("job %+v", j)
	}
}

func TestJobStates(t *testing.T) {
	exit := int32(3)
	start := metav1.NewTime(time.Unix(2000, 0))
	cases := []struct {
		name   string
		status v1alpha1.PodGroupStatus
		hold   bool
		state  []string
		reason string
	}{
		{"new", v1alpha1.PodGroupStatus{}, false, []string{"PENDING"}, "None"},
		{"waiting", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Conditions: []metav1.Condition{{Type: v1alpha1.PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: "Resources"}}}, false, []string{"PENDING"}, "Resources"},
		{"held", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending}, true, []string{"PENDING"}, "JobHeldUser"},
		{"requeued", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Requeues: 1}, false, []string{"PENDING", "REQUEUED"}, "None"},
		{"running", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, StartTime: &start, Nodes: []string{"gpu-2", "gpu-1"}}, false, []string{"RUNNING"}, "None"},
		{"completed", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupSucceeded}, false, []string{"COMPLETED"}, "None"},
		{"failed", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupFailed, ExitCode: &exit}, false, []string{"FAILED"}, "NonZeroExitCode"},
		{"cancelled", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupCancelled}, false, []string{"CANCELLED"}, "None"},
		{"timeout", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupTimedOut}, false, []string{"TIMEOUT"}, "TimeLimit"},
		{"preempted", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPreempted}, false, []string{"PREEMPTED"}, "None"},
	}
	for _, tc := range cases {
		pg := &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: "job-1", Namespace: "slurm-nlp", Labels: map[string]string{v1alpha1.JobIDLabel: "1"}},
			Spec:       v1alpha1.PodGroupSpec{MinMember: 2, Queue: "nlp", Slurm: &v1alpha1.SlurmJob{User: "alice", Nodes: 2, Tasks: 2, CPUsPerTask: 1, Hold: tc.hold}},
			Status:     tc.status,
		}
		j, err := JobFromPodGroup(pg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(j.State, tc.state) || j.Reason != tc.reason {
			t.Errorf("%s: %v/%s, want %v/%s", tc.name, j.State, j.Reason, tc.state, tc.reason)
		}
		if tc.name == "running" && (j.NodeList != "gpu-[1-2]" || !j.StartTime.Equal(start.Time)) {
			t.Errorf("running: nodes %q start %v", j.NodeList, j.StartTime)
		}
		if tc.name == "failed" && j.ExitCode != 3 {
			t.Errorf("failed: exit code %d", j.ExitCode)
		}
	}
}

func TestManifestPodGroupShowsAsJob(t *testing.T) {
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "pytorchjob-x", Namespace: "ml", Labels: map[string]string{v1alpha1.JobIDLabel: "77"}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 3, Queue: "vision"},
		Status:     v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning},
	}
	j, err := JobFromPodGroup(pg)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Manifest || j.ID != 77 || j.Desc.Name != "ml/pytorchjob-x" || j.Desc.Account != "vision" || j.Desc.Nodes != 3 || j.State[0] != "RUNNING" {
		t.Errorf("manifest job %+v", j)
	}
	pg.Labels = nil
	if _, err := JobFromPodGroup(pg); err == nil {
		t.Error("a PodGroup without a job id was read as a job")
	}
}

// TestStoredSubmissionFields: what sbatch asks for beyond the gang shape
// (UNLIMITED time, --begin, --priority) survives the PodGroup and is what
// squeue shows.
func TestStoredSubmissionFields(t *testing.T) {
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	base := slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/sh\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1}
	cases := []struct {
		name   string
		change func(d *slurmapi.JobDesc)
		check  func(pg *v1alpha1.PodGroup, j slurmapi.Job) string
	}{
		{"UNLIMITED is no limit, not the partition default", func(d *slurmapi.JobDesc) { d.TimeLimit = sbatch.Unlimited },
			func(pg *v1alpha1.PodGroup, j slurmapi.Job) string {
				if pg.Spec.Slurm.TimeLimit == nil || pg.Spec.Slurm.TimeLimit.Duration != 0 || j.Desc.TimeLimit != sbatch.Unlimited {
					return fmt.Sprintf("stored %v, read back %v", pg.Spec.Slurm.TimeLimit, j.Desc.TimeLimit)
				}
				return ""
			}},
		{"a begin time ahead keeps the job pending with BeginTime", func(d *slurmapi.JobDesc) { d.BeginTime = later },
			func(pg *v1alpha1.PodGroup, j slurmapi.Job) string {
				if !j.Desc.BeginTime.Equal(later) || j.Reason != "BeginTime" || len(pg.Spec.Members) != 0 || !strings.HasPrefix(j.TRESReq, "cpu=1,") {
					return fmt.Sprintf("begin %v reason %s, members %v (kept from the scheduler: none), tres %s", j.Desc.BeginTime, j.Reason, pg.Spec.Members, j.TRESReq)
				}
				var ne *NotEligible
				if err := Eligible(context.Background(), nil, pg); !errors.As(err, &ne) || ne.Reason != "BeginTime" {
					return fmt.Sprintf("eligible before its begin time: %v", err)
				}
				return ""
			}},
		{"a begin time passed does not hold the job", func(d *slurmapi.JobDesc) { d.BeginTime = time.Now().Add(-time.Minute) },
			func(pg *v1alpha1.PodGroup, j slurmapi.Job) string {
				if err := Eligible(context.Background(), nil, pg); err != nil || j.Reason != "None" || len(pg.Spec.Members) != 1 {
					return fmt.Sprintf("reason %s, eligible: %v, members %v", j.Reason, err, pg.Spec.Members)
				}
				return ""
			}},
		{"priority", func(d *slurmapi.JobDesc) { d.Priority = 5000 },
			func(pg *v1alpha1.PodGroup, j slurmapi.Job) string {
				if j.Priority != 5000 {
					return fmt.Sprintf("priority %d", j.Priority)
				}
				return ""
			}},
	}
	for _, tc := range cases {
		d := base
		tc.change(&d)
		pg := PodGroupFor(&d, 9)
		j, err := JobFromPodGroup(pg)
		if err != nil {
			t.Fatal(err)
		}
		if problem := tc.check(pg, j); problem != "" {
			t.Errorf("%s: %s", tc.name, problem)
		}
	}
}

// TestFailedJobIsAlwaysStorable: what stays of a refused job keeps what
// can be kept and nothing the schema could refuse again.
func TestFailedJobIsAlwaysStorable(t *testing.T) {
	bad := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "slurm-nlp", Annotations: map[string]string{SubmitTimeAnnotation: "2026-01-01T00:00:00Z"}},
		Spec: v1alpha1.PodGroupSpec{Queue: "nlp", Partition: "Bad Partition", QOS: "normal",
			Slurm: &v1alpha1.SlurmJob{Name: strings.Repeat("é", 300) + "\x1b", User: "alice", Nodes: 2, Tasks: 4, Script: "#!/bin/sh"}},
	}
	cases := []struct {
		name string
		pg   *v1alpha1.PodGroup
		ns   string
		user string
		q    string
		part string
	}{
		{"refused group", bad, "slurm-nlp", "alice", "nlp", ""},
		{"undecodable entry", nil, "sluice-system", "unknown", "unknown", ""},
	}
	for _, tc := range cases {
		got := failedJob(42, "sluice-system", tc.pg)
		s := got.Spec.Slurm
		if got.Name != "job-42" || got.Namespace != tc.ns || got.Labels[v1alpha1.JobIDLabel] != "42" || s.User != tc.user ||
			got.Spec.Queue != tc.q || got.Spec.Partition != tc.part || len(got.Spec.Members) != 0 || s.Script != "" {
			t.Errorf("%s: %+v %+v", tc.name, got.ObjectMeta, got.Spec)
		}
		if n := len([]rune(s.Name)); n > slurmapi.MaxNameChars || strings.ContainsRune(s.Name, 0x1b) {
			t.Errorf("%s: name of %d characters %q", tc.name, n, s.Name)
		}
	}
}

// TestShardJobShownAsAsked: --gres=shard:2 reads back as two shards (shown
// gres/shard:2, as Slurm shows it) and the TRES strings carry the share
// of a GPU and the shards.
func TestShardJobShownAsAsked(t *testing.T) {
	cat := siteCatalog(t)
	d, err := submit(t, cat, "alice", `{"script":"#!/bin/sh\n#SBATCH --gres=shard:2\n","job":{}}`)
	if err != nil {
		t.Fatal(err)
	}
	j, jerr := JobFromPodGroup(PodGroupFor(d, 7))
	if jerr != nil {
		t.Fatal(jerr)
	}
	if j.Desc.GPUs.Shards != 2 || j.Desc.GPUs.Fraction != 0.25 {
		t.Errorf("GPU request read back as %+v, want 2 shards (0.25 GPU)", j.Desc.GPUs)
	}
	if want := "cpu=1,node=1,billing=1,gres/gpu=0.25,gres/shard=2"; j.TRESReq != want {
		t.Errorf("TRES %q, want %q", j.TRESReq, want)
	}
}

// A job listing partitions shows the list while it is pending (the round trip keeps what
// was submitted), then the partition it runs in, as Slurm does.
func TestPartitionListShown(t *testing.T) {
	d := &slurmapi.JobDesc{Partition: "h100,a100", Account: "nlp", User: "alice", Nodes: 1, Tasks: 1, CPUsPerTask: 1}
	pg := PodGroupFor(d, 9)
	j, err := JobFromPodGroup(pg)
	if err != nil || j.Desc.Partition != "h100,a100" {
		t.Fatalf("pending job shows partition %q (%v), want the list", j.Desc.Partition, err)
	}
	start := metav1.NewTime(time.Unix(2000, 0))
	pg.Spec.Partition, pg.Status = "a100", v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, StartTime: &start, Nodes: []string{"gpu-1"}}
	if j, _ = JobFromPodGroup(pg); j.Desc.Partition != "a100" || j.State[0] != "RUNNING" {
		t.Errorf("running job shows partition %q (%v), want a100", j.Desc.Partition, j.State)
	}
	f := slurmapi.JobFilter{Partitions: []string{"h100"}}
	if j, _ = JobFromPodGroup(PodGroupFor(d, 10)); !matches(f, &j) {
		t.Errorf("squeue -p h100 leaves out a pending job listing h100,a100")
	}
}
