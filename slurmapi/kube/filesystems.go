package kube

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Filesystem is a filesystem a site mounts into every Slurm job pod, as a Slurm cluster
// mounts /home, /scratch and /datasets on every node: jobs find their working directory
// there and write their --output files there, and the files outlive the pods. The site
// declares it once (slurm.filesystems); Partitions limits it to some partitions, and a
// partition's own entry replaces a cluster-wide one at the same MountPath.
type Filesystem struct {
	// Name names the volume in the pods (sluice-fs-<name>) and the filesystem in errors.
	Name string `json:"name"`
	// MountPath is where every job pod sees it; the same path as on the login nodes, so
	// a path means the same file in and out of jobs.
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// Partitions limits it to jobs running in these partitions; empty: every job.
	Partitions []string `json:"partitions,omitempty"`
	// Exactly one source: persistentVolumeClaim (a claim of that name must exist in each
	// account's namespace), hostPath (the nodes mount it), nfs, csi or cephfs.
	corev1.VolumeSource `json:",inline"`
}

// reservedMounts are the launcher's own directories in a job pod: a site filesystem
// mounted over one would hide the launcher, the script or the launch key.
var reservedMounts = []string{scriptDir, launcherDir, launchKeyDir, envDir}

// Validate reports a filesystem a pod could not mount, or one that would hide what the
// launcher needs.
func (fs Filesystem) Validate() error {
	if fs.Name == "" || len(fs.Name) > 40 || strings.Trim(fs.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
		strings.HasPrefix(fs.Name, "-") || strings.HasSuffix(fs.Name, "-") {
		return fmt.Errorf("filesystem name %q: want 1 to 40 lowercase letters, digits and inner dashes", fs.Name)
	}
	p := fs.MountPath
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("filesystem %s: mountPath %q: want a clean absolute path other than /", fs.Name, p)
	}
	for _, r := range reservedMounts {
		if p == r || strings.HasPrefix(r, p+"/") || strings.HasPrefix(p, r+"/") {
			return fmt.Errorf("filesystem %s: mountPath %s would hide or sit in the launcher's %s", fs.Name, p, r)
		}
	}
	var kinds []string
	v := fs.VolumeSource
	for kind, set := range map[string]bool{
		"persistentVolumeClaim": v.PersistentVolumeClaim != nil, "hostPath": v.HostPath != nil,
		"nfs": v.NFS != nil, "csi": v.CSI != nil, "cephfs": v.CephFS != nil,
	} {
		if set {
			kinds = append(kinds, kind)
		}
	}
	var other corev1.VolumeSource
	other.PersistentVolumeClaim, other.HostPath, other.NFS, other.CSI, other.CephFS = v.PersistentVolumeClaim, v.HostPath, v.NFS, v.CSI, v.CephFS
	switch {
	case other != v:
		return fmt.Errorf("filesystem %s: its source must be one of persistentVolumeClaim, hostPath, nfs, csi, cephfs (a shared filesystem)", fs.Name)
	case len(kinds) != 1:
		return fmt.Errorf("filesystem %s: want exactly one source (persistentVolumeClaim, hostPath, nfs, csi or cephfs), have %d", fs.Name, len(kinds))
	case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "":
		return fmt.Errorf("filesystem %s: persistentVolumeClaim needs a claimName", fs.Name)
	case v.HostPath != nil && !path.IsAbs(v.HostPath.Path):
		return fmt.Errorf("filesystem %s: hostPath needs an absolute path", fs.Name)
	case v.NFS != nil && (v.NFS.Server == "" || v.NFS.Path == ""):
		return fmt.Errorf("filesystem %s: nfs needs a server and a path", fs.Name)
	}
	return nil
}

// Filesystems are a site's filesystems for Slurm jobs.
type Filesystems []Filesystem

// Validate checks each filesystem, and that no two of one scope (cluster-wide, or one
// partition's) share a name or a mount path.
func (l Filesystems) Validate() error {
	names := map[string]bool{}
	mounts := map[string]bool{}
	for _, fs := range l {
		if err := fs.Validate(); err != nil {
			return err
		}
		if names[fs.Name] {
			return fmt.Errorf("filesystem name %s is used twice", fs.Name)
		}
		names[fs.Name] = true
		scopes := fs.Partitions
		if len(scopes) == 0 {
			scopes = []string{""}
		}
		for _, s := range scopes {
			if mounts[s+"\x00"+fs.MountPath] {
				where := "cluster-wide"
				if s != "" {
					where = "for partition " + s
				}
				return fmt.Errorf("filesystem %s: two filesystems mount %s %s", fs.Name, fs.MountPath, where)
			}
			mounts[s+"\x00"+fs.MountPath] = true
		}
	}
	return nil
}

// For are the filesystems a job in partition gets, in the order declared:
// the cluster-wide ones, each replaced by the partition's own at the same mount path,
// and the partition's others.
func (l Filesystems) For(partition string) []Filesystem {
	var out []Filesystem
	own := map[string]bool{}
	for _, fs := range l {
		if len(fs.Partitions) > 0 && slices.Contains(fs.Partitions, partition) {
			own[fs.MountPath] = true
		}
	}
	for _, fs := range l {
		switch {
		case len(fs.Partitions) == 0 && !own[fs.MountPath], len(fs.Partitions) > 0 && slices.Contains(fs.Partitions, partition):
			out = append(out, fs)
		}
	}
	return out
}

// volumeName is the pod volume of a site filesystem.
func (fs Filesystem) volumeName() string { return "sluice-fs-" + fs.Name }

// mountFilesystems adds the job's filesystems to its pod's volumes and container.
func mountFilesystems(pod *corev1.Pod, fss []Filesystem) {
	c := &pod.Spec.Containers[0]
	for _, fs := range fss {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: fs.volumeName(), VolumeSource: *fs.VolumeSource.DeepCopy()})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: fs.volumeName(), MountPath: fs.MountPath, ReadOnly: fs.ReadOnly})
	}
}

// checkClaims reports a filesystem whose claim is missing from the job's namespace: the
// kubelet would leave the pods pending, with nothing said to the job's user.
func checkClaims(ctx context.Context, c client.Client, namespace string, fss []Filesystem) error {
	for _, fs := range fss {
		pvc := fs.PersistentVolumeClaim
		if pvc == nil {
			continue
		}
		var have corev1.PersistentVolumeClaim
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pvc.ClaimName}, &have)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("filesystem %s: PersistentVolumeClaim %s/%s does not exist: every account's namespace needs a claim of that name (docs/install.md, \"Site filesystems\")",
				fs.Name, namespace, pvc.ClaimName)
		case err != nil:
			return fmt.Errorf("filesystem %s: read PersistentVolumeClaim %s/%s: %w", fs.Name, namespace, pvc.ClaimName, err)
		}
	}
	return nil
}
