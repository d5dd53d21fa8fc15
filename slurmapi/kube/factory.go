package kube

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// PodOptions configure the pod factory.
type PodOptions struct {
	// Users maps Slurm users to the identity their pods run as, and says
	// what becomes of users it does not map; the REST API shares it.
	Users UserMap
	// DefaultImage runs jobs that name no image in a partition that names
	// none; empty refuses such jobs.
	DefaultImage string
	// LauncherImage is the sluice image whose binary every job pod's init
	// container copies in (the launcher and srun); default
	// DefaultLauncherImage.
	LauncherImage string
	// Timeout bounds the reads and the Service create of one call; default 10s.
	Timeout time.Duration
	// LaunchKeySeed derives each job's launch key (LaunchKey) and opens the
	// environments the backend sealed (its Options.TokenKey); the server
	// gives its token key, so every replica derives the same keys. Empty:
	// a random seed for this factory's life.
	LaunchKeySeed []byte
	// ClusterDomain is the cluster's DNS domain (the kubelets' clusterDomain): a job's
	// pods search their job's Service under it. Default DefaultClusterDomain.
	ClusterDomain string
	// InactiveLimit is how long an allocation stays once no salloc holds it;
	// 0 is the launcher's default (launch.EnvInactiveLimit).
	InactiveLimit time.Duration
	// Filesystems are the site's shared filesystems (slurm.filesystems), mounted
	// into the pods of the jobs of the partitions each names.
	Filesystems Filesystems
}

// DefaultLauncherImage is the launcher image of a factory not given one.
const DefaultLauncherImage = "ghcr.io/sluicehq/sluice:latest"

// PodFactory makes the pods of Slurm jobs for the scheduler
// (k8sscheduler/scheduler.PodFactory). It refuses a job that is held or
// whose dependencies are not met, so such a job never starts even while the
// scheduler cannot tell it apart from an eligible one.
type PodFactory struct {
	c    client.Client
	opts PodOptions
}

// NewPodFactory connects a pod factory to the cluster of cfg.
func NewPodFactory(cfg *rest.Config, opts PodOptions) (*PodFactory, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.LauncherImage == "" {
		opts.LauncherImage = DefaultLauncherImage
	}
	if len(opts.LaunchKeySeed) == 0 {
		opts.LaunchKeySeed = randomSeed()
	}
	return &PodFactory{c: c, opts: opts}, nil
}

// Pods makes one pod per bind of the Slurm job pg.
func (f *PodFactory) Pods(pg *v1alpha1.PodGroup, binds []bridge.Bind) ([]*corev1.Pod, error) {
	s := pg.Spec.Slurm
	if s == nil {
		return nil, fmt.Errorf("PodGroup %s/%s is not a Slurm job (no spec.slurm)", pg.Namespace, pg.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.Timeout)
	defer cancel()
	if err := Eligible(ctx, f.c, pg); err != nil {
		return nil, err
	}
	// A source that could not answer (the directory unreachable) fails this
	// try only: the scheduler tries the start again, the job stays pending.
	ids, err := f.opts.Users.Lookup(ctx, s.User)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	run := RunAs{Image: s.Image, IDs: &ids, LauncherImage: f.opts.LauncherImage, Start: time.Now(), ClusterDomain: f.opts.ClusterDomain, InactiveLimit: f.opts.InactiveLimit}
	if run.StrictGroups, err = f.strictGroups(ctx, binds); err != nil {
		return nil, err
	}
	if s.TimeLimit != nil {
		run.TimeLimit = s.TimeLimit.Duration // 0: UNLIMITED
	}
	if pg.Spec.Partition != "" {
		var p v1alpha1.Partition
		if err := f.c.Get(ctx, client.ObjectKey{Name: pg.Spec.Partition}, &p); err != nil {
			return nil, fmt.Errorf("partition %s of job %s: %w", pg.Spec.Partition, pg.Labels[v1alpha1.JobIDLabel], err)
		}
		if run.Image == "" {
			run.Image = p.Spec.DefaultImage
		}
		run.GPUDeviceClass = p.Spec.GPUDeviceClass
		if s.TimeLimit == nil && p.Spec.DefaultTime != nil {
			run.TimeLimit = p.Spec.DefaultTime.Duration
		}
	}
	if run.Image == "" {
		run.Image = f.opts.DefaultImage
	}
	run.Filesystems = f.opts.Filesystems.For(pg.Spec.Partition)
	if err := checkClaims(ctx, f.c, pg.Namespace, run.Filesystems); err != nil {
		return nil, fmt.Errorf("job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	serves := ServesLaunches(pg, len(binds))
	if serves {
		run.LaunchKey = LaunchKey(f.opts.LaunchKeySeed, pg)
	}
	pods, err := BuildPods(pg, binds, run)
	if err != nil {
		return nil, err
	}
	if err := f.ensureGPUClaims(ctx, pg, pods); err != nil {
		return nil, err
	}
	if err := f.withEnvironment(ctx, pg, pods); err != nil {
		return nil, err
	}
	if serves {
		if err := f.ensureJobService(ctx, pg); err != nil {
			return nil, err
		}
		if err := f.ensureLaunchKey(ctx, pg, run.LaunchKey); err != nil {
			return nil, err
		}
	}
	return pods, nil
}

// strictGroups reports whether every node of binds supports
// supplementalGroupsPolicy Strict (its kubelet says so in status.features;
// it refuses such a pod otherwise).
func (f *PodFactory) strictGroups(ctx context.Context, binds []bridge.Bind) (bool, error) {
	seen := map[string]bool{}
	for _, b := range binds {
		if seen[b.Node] {
			continue
		}
		seen[b.Node] = true
		var n corev1.Node
		if err := f.c.Get(ctx, client.ObjectKey{Name: b.Node}, &n); err != nil {
			return false, fmt.Errorf("node %s: %w", b.Node, err)
		}
		if feat := n.Status.Features; feat == nil || feat.SupplementalGroupsPolicy == nil || !*feat.SupplementalGroupsPolicy {
			return false, nil
		}
	}
	return true, nil
}

// ensureJobService creates the job's headless Service (jobService). One left by an
// earlier run of the job is the same; one of that name the job does not own (made by
// someone with rights in the namespace, to catch the job's node names and srun's
// launches) is refused: the job's pods are not made.
func (f *PodFactory) ensureJobService(ctx context.Context, pg *v1alpha1.PodGroup) error {
	svc := jobService(pg)
	err := f.c.Create(ctx, svc)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the headless Service %s/%s: %w", pg.Namespace, svc.Name, err)
	}
	var have corev1.Service
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(svc), &have); err != nil {
		return fmt.Errorf("read the headless Service %s/%s: %w", pg.Namespace, svc.Name, err)
	}
	if !ownedBy(&have, pg) || !maps.Equal(have.Spec.Selector, svc.Spec.Selector) || have.Spec.ClusterIP != corev1.ClusterIPNone {
		return fmt.Errorf("a Service %s/%s exists that is not job %s's headless Service (not owned by its PodGroup, or another selector): "+
			"the job's node names would resolve through it; delete it", pg.Namespace, svc.Name, pg.Labels[v1alpha1.JobIDLabel])
	}
	return nil
}

// ownedBy reports whether obj is owned by the PodGroup pg (by UID; pg without a UID,
// made in a test, owns what names it).
func ownedBy(obj metav1.Object, pg *v1alpha1.PodGroup) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "PodGroup" && o.Name == pg.Name && (pg.UID == "" || o.UID == pg.UID) {
			return true
		}
	}
	return pg.UID == ""
}

// jobObjectMeta names an object made for the job pg: labelled as Sluice's and the
// job's, and owned by its PodGroup, so it goes with the job.
func jobObjectMeta(name string, pg *v1alpha1.PodGroup) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: pg.Namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "sluice", v1alpha1.JobIDLabel: pg.Labels[v1alpha1.JobIDLabel]}}
	if pg.UID != "" {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup", Name: pg.Name, UID: pg.UID}}
	}
	return m
}

// ensureLaunchKey creates the job's launch key Secret, once for all its
// runs under one token key of the server (a run after a rotation derives
// another key, named by its own Secret); the PodGroup owns it, so it goes
// with the job. Only the job's pods
// mount it: srun and the launchers of other jobs cannot sign for this one.
// A Secret already there is either this job's from an earlier run (the
// same derived key) or planted, which the pods refuse (EnvKeySHA256).
func (f *PodFactory) ensureLaunchKey(ctx context.Context, pg *v1alpha1.PodGroup, key string) error {
	sec := &corev1.Secret{
		ObjectMeta: jobObjectMeta(LaunchSecretName(pg, key), pg),
		Data:       map[string][]byte{LaunchKeyField: []byte(key)},
		Immutable:  ptrTo(true), // no later update swaps the key under the job
	}
	if err := f.c.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the launch key Secret %s/%s: %w", pg.Namespace, sec.Name, err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
