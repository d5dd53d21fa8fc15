// Package kube is the Slurm API's Backend on Kubernetes. A submitted job
// becomes one PodGroup (carrying the job description, no pods until the
// scheduler starts it) with an id from a block-reserved ConfigMap counter;
// PodGroups read back as Slurm jobs (manifest workloads too); Nodes,
// Partitions, Queues and QOS become sinfo's nodes and partitions, the
// catalogue submissions are validated against, and sacctmgr's accounts,
// associations and QOS.
package kube

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Namespace is where jobs charged to account run, unless the site maps
// the account elsewhere.
func Namespace(account string) string { return v1alpha1.SlurmNamespace(account) }

// PodGroupName names the PodGroup of job id.
func PodGroupName(id uint32) string { return "job-" + strconv.FormatUint(uint64(id), 10) }

// memberName is the one member set of a Slurm job: its nodes.
const memberName = "node"

// What a submission asks for beyond what spec.slurm has fields for, kept
// as annotations on the job's PodGroup so views show it and the lifecycle
// and pod factory honour it.
const (
	// GPUTypeAnnotation is the GPU model of gres/gpu:TYPE:N ("h100").
	GPUTypeAnnotation = "sluice.dev/gpu-type"
	// BeginTimeAnnotation (RFC 3339) is --begin: the job may not start
	// before it (reason BeginTime).
	BeginTimeAnnotation = v1alpha1.BeginTimeAnnotation
	// ShardsAnnotation is the count of gres/shard:N, kept so the job
	// shows what was asked for (gres/shard:2, not the GPU fraction).
	ShardsAnnotation = "sluice.dev/gpu-shards"
	// PriorityAnnotation is a priority an operator set (--priority,
	// scontrol update priority=N); the scheduler orders by it.
	PriorityAnnotation = v1alpha1.PriorityAnnotation
	// SignalAnnotation is --signal (kill_warning_*) as sbatch.Signal
	// writes it ("B:10@60"): the pod factory hands it to the launchers.
	SignalAnnotation = "sluice.dev/signal"
	// CommandAnnotation is the batch script's path as sbatch named it
	// (scontrol's Command).
	CommandAnnotation = "sluice.dev/command"
)

// formatShards writes a ShardsAnnotation value, in decimal.
func formatShards(shards int) string { return strconv.Itoa(shards) }

// parseShards reads a ShardsAnnotation value.
func parseShards(value string) (int, error) { return strconv.Atoi(value) }

// annotations are the job's GPU type, begin time and priority, if any.
func annotations(d *slurmapi.JobDesc) map[string]string {
	ann := map[string]string{}
	if d.GPUs.Type != "" {
		ann[GPUTypeAnnotation] = d.GPUs.Type
	}
	if !d.BeginTime.IsZero() {
		ann[BeginTimeAnnotation] = v1alpha1.FormatBeginTime(d.BeginTime)
	}
	if d.GPUs.Shards > 0 {
		ann[ShardsAnnotation] = formatShards(d.GPUs.Shards)
	}
	if d.Priority > 0 {
		ann[PriorityAnnotation] = v1alpha1.FormatPriority(d.Priority)
	}
	if d.Nice != 0 {
		ann[v1alpha1.NiceAnnotation] = v1alpha1.FormatNice(d.Nice)
	}
	if d.Signal != "" {
		ann[SignalAnnotation] = d.Signal
	}
	if d.Command != "" {
		ann[CommandAnnotation] = d.Command
	}
	if d.Reservation != "" {
		ann[v1alpha1.ReservationAnnotation] = d.Reservation // the scheduler holds the job to it
	}
	placementAnnotations(d, ann)
	submitEnvAnnotation(d, ann)
	return ann
}

// beginTime is the job's --begin, zero if none (or unreadable).
func beginTime(pg *v1alpha1.PodGroup) time.Time {
	t, _ := v1alpha1.ParseBeginTime(pg.Annotations[BeginTimeAnnotation])
	return t
}

// PodGroupFor builds the PodGroup that stores a validated job: MinMember
// and one member set of Nodes identical pods, each with the job's per-node
// CPUs, memory and GPUs (or a GPU share), and the job description in
// spec.slurm. Creating it is the job's only API write while it is pending.
func PodGroupFor(d *slurmapi.JobDesc, id uint32) *v1alpha1.PodGroup {
	labels := map[string]string{v1alpha1.JobIDLabel: v1alpha1.FormatJobID(id), v1alpha1.QueueLabel: d.Account}
	partition := "" // the first listed; the job's list is in PartitionsAnnotation
	if parts := d.Partitions(); len(parts) > 0 {
		partition = parts[0]
		labels[v1alpha1.PartitionLabel] = partition
	}
	member := v1alpha1.MemberSet{Name: memberName, Count: int32(d.Nodes), Resources: perNode(d)}
	if d.GPUs.Fraction > 0 {
		member.GPUSharing = &v1alpha1.GPUSharing{Fraction: fraction(d.GPUs.Fraction), Devices: 1}
	}
	pg := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: PodGroupName(id), Namespace: Namespace(d.Account), Labels: labels, Annotations: annotations(d)},
		Spec: v1alpha1.PodGroupSpec{
			MinMember: int32(d.Nodes),
			Queue:     d.Account,
			Partition: partition,
			QOS:       d.QOS,
			Members:   []v1alpha1.MemberSet{member},
			Slurm:     slurmJob(d),
		},
	}
	if a, err := sbatch.ParseArray(d.Array); d.Array != "" && err == nil {
		asArrayRecord(pg, a) // d was validated: the array parses
	} else if time.Now().Before(d.BeginTime) {
		deferMembers(pg) // the lifecycle hands them back at the begin time
	}
	return pg
}

func perNode(d *slurmapi.JobDesc) corev1.ResourceList {
	n := d.PerNode()
	rl := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(n.CPUs, resource.DecimalSI)}
	if n.MemoryMiB > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(n.MemoryMiB<<20, resource.BinarySI)
	}
	if n.GPUs > 0 {
		rl[v1alpha1.GPUResource] = *resource.NewQuantity(n.GPUs, resource.DecimalSI)
	}
	return rl
}

// fraction writes a GPU share as the CRD's pattern wants it: "0.25".
func fraction(f float64) string {
	return strconv.FormatFloat(math.Round(f*1e4)/1e4, 'f', -1, 64)
}

func slurmJob(d *slurmapi.JobDesc) *v1alpha1.SlurmJob {
	s := &v1alpha1.SlurmJob{
		Name: d.Name, User: d.User, Script: d.Script, Argv: d.Argv,
		Nodes: int32(d.Nodes), Tasks: int32(d.Tasks), CPUsPerTask: int32(d.CPUsPerTask),
		Array: d.Array, Dependency: d.Dependency, Requeue: d.Requeue, Hold: d.Hold,
		StandardOutput: d.Stdout, StandardError: d.Stderr, StandardInput: d.Stdin,
		WorkingDirectory: d.WorkDir, Image: d.ContainerImage, Comment: d.Comment,
	}
	if d.TasksPerNode > 0 {
		tpn := int32(d.TasksPerNode)
		s.TasksPerNode = &tpn
	}
	switch {
	case d.TimeLimit == sbatch.Unlimited:
		s.TimeLimit = &metav1.Duration{} // "0s": no limit, not the partition's default
	case d.TimeLimit > 0:
		s.TimeLimit = &metav1.Duration{Duration: d.TimeLimit}
	}
	if mem, ok := perNode(d)[corev1.ResourceMemory]; ok {
		s.MemoryPerNode = &mem
	}
	switch {
	case d.GPUs.Fraction > 0:
		q := resource.MustParse(fraction(d.GPUs.Fraction))
		s.GPUsPerNode = &q
	case d.PerNode().GPUs > 0:
		q := *resource.NewQuantity(d.PerNode().GPUs, resource.DecimalSI)
		s.GPUsPerNode = &q
	}
	if len(d.Environment) > 0 {
		s.Environment = make(map[string]string, len(d.Environment))
		for _, kv := range d.Environment {
			k, v, _ := strings.Cut(kv, "=")
			s.Environment[k] = v
		}
	}
	return s
}

// JobFromPodGroup reads a PodGroup as a Slurm job: a Slurm-submitted one
// from its spec.slurm, a manifest workload from what its spec states.
func JobFromPodGroup(pg *v1alpha1.PodGroup) (slurmapi.Job, error) {
	id, err := v1alpha1.ParseJobID(pg.Labels[v1alpha1.JobIDLabel])
	if err != nil || id == 0 {
		return slurmapi.Job{}, fmt.Errorf("PodGroup %s/%s has no valid %s label", pg.Namespace, pg.Name, v1alpha1.JobIDLabel)
	}
	j := slurmapi.Job{ID: id, SubmitTime: pg.SubmitTime(), Manifest: pg.Spec.Slurm == nil}
	j.Desc = descFromPodGroup(pg)
	if arrayRecord(pg) {
		j.ArrayJobID, j.ArrayPending = j.ID, pg.Annotations[ArrayPendingAnnotation]
	}
	if s := pg.Spec.Slurm; s != nil && s.ArrayJobID != nil && s.ArrayTaskID != nil {
		j.ArrayJobID = uint32(*s.ArrayJobID)
		task := int(*s.ArrayTaskID)
		j.ArrayTaskID = &task
	}
	j.Priority, _ = v1alpha1.ParsePriority(pg.Annotations[PriorityAnnotation])
	j.CPUs, j.TRESReq = tres(pg)
	setView(&j, &jobstate.Job{Kind: jobstate.KindOf(pg), Group: pg})
	return j, nil
}

func descFromPodGroup(pg *v1alpha1.PodGroup) slurmapi.JobDesc {
	d := slurmapi.JobDesc{
		Name: pg.Namespace + "/" + pg.Name, Account: pg.Spec.Queue, Partition: pg.Spec.Partition,
		QOS: pg.Spec.QOS, Nodes: int(pg.Spec.MinMember), Tasks: int(pg.Spec.MinMember), CPUsPerTask: 1,
	}
	if members := taskMembers(pg); len(members) > 0 {
		m := members[0]
		if g, ok := m.Resources[v1alpha1.GPUResource]; ok {
			d.GPUs.PerNode = int(g.Value())
		}
		if m.GPUSharing != nil && m.GPUSharing.Fraction != "" {
			d.GPUs.Fraction, _ = strconv.ParseFloat(m.GPUSharing.Fraction, 64)
		}
		if mem, ok := m.Resources[corev1.ResourceMemory]; ok {
			d.MemoryPerNode = mem.Value() >> 20
		}
	}
	d.GPUs.Type = pg.Annotations[GPUTypeAnnotation]
	if d.GPUs.Fraction > 0 {
		d.GPUs.Shards, _ = parseShards(pg.Annotations[ShardsAnnotation])
	}
	d.Nice, _ = v1alpha1.ParseNice(pg.Annotations[v1alpha1.NiceAnnotation])
	d.Reservation = pg.Annotations[v1alpha1.ReservationAnnotation]
	readPlacement(pg.Annotations, &d)
	s := pg.Spec.Slurm
	if s == nil {
		d.User = v1alpha1.ManifestUser(pg.Namespace) // never a Slurm user's name
		return d
	}
	d.Name, d.User, d.Script, d.Argv = s.Name, s.User, s.Script, s.Argv
	d.Command = pg.Annotations[CommandAnnotation]
	d.SubmitEnv = recordedSubmitEnv(pg)
	d.Nodes, d.Tasks, d.CPUsPerTask = int(s.Nodes), int(s.Tasks), int(s.CPUsPerTask)
	if s.TasksPerNode != nil {
		d.TasksPerNode = int(*s.TasksPerNode)
	}
	switch {
	case s.TimeLimit != nil && s.TimeLimit.Duration == 0:
		d.TimeLimit = sbatch.Unlimited
	case s.TimeLimit != nil:
		d.TimeLimit = s.TimeLimit.Duration
	}
	d.BeginTime = beginTime(pg)
	d.Array, d.Dependency, d.Requeue, d.Hold = s.Array, s.Dependency, s.Requeue, s.Hold
	d.Stdout, d.Stderr, d.Stdin = s.StandardOutput, s.StandardError, s.StandardInput
	d.WorkDir, d.ContainerImage, d.Comment = s.WorkingDirectory, s.Image, s.Comment
	for k, v := range s.Environment {
		d.Environment = append(d.Environment, k+"="+v)
	}
	sort.Strings(d.Environment)
	return d
}

// tres renders what the job asks for as Slurm's TRES string.
func tres(pg *v1alpha1.PodGroup) (int, string) {
	nodes := int64(pg.Spec.MinMember)
	var cpus, memMiB, gpus int64
	var share float64 // GPU fractions, summed over the nodes
	for _, m := range taskMembers(pg) {
		n := int64(m.Count)
		if g := m.GPUSharing; g != nil && g.Fraction != "" {
			f, _ := strconv.ParseFloat(g.Fraction, 64)
			share += float64(n) * f
		}
		if c, ok := m.Resources[corev1.ResourceCPU]; ok {
			cpus += n * c.Value()
		}
		if mem, ok := m.Resources[corev1.ResourceMemory]; ok {
			memMiB += n * (mem.Value() >> 20)
		}
		if g, ok := m.Resources[v1alpha1.GPUResource]; ok {
			gpus += n * g.Value()
		}
	}
	s := fmt.Sprintf("cpu=%d", cpus)
	if memMiB > 0 {
		s += fmt.Sprintf(",mem=%dM", memMiB)
	}
	s += fmt.Sprintf(",node=%d,billing=%d", nodes, cpus)
	if gpus > 0 {
		s += fmt.Sprintf(",gres/gpu=%d", gpus)
		if typ := pg.Annotations[GPUTypeAnnotation]; typ != "" {
			s += fmt.Sprintf(",gres/gpu:%s=%d", typ, gpus)
		}
	}
	if share > 0 {
		// A share of a GPU, as Sluice counts it; gres/shard as asked.
		s += ",gres/gpu=" + strconv.FormatFloat(math.Round(share*1e4)/1e4, 'f', -1, 64)
		if shards, err := parseShards(pg.Annotations[ShardsAnnotation]); err == nil && shards > 0 {
			s += fmt.Sprintf(",gres/shard=%d", int64(shards)*nodes)
		}
	}
	return int(cpus), s
}
