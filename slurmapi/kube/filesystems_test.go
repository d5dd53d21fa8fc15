package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/slurmapi"
)

func nfsFS(name, mount string, parts ...string) Filesystem {
	return Filesystem{Name: name, MountPath: mount, Partitions: parts,
		VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs-" + name, Path: "/export" + mount}}}
}

func TestFilesystemsValidate(t *testing.T) {
	pvc := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "home"}}
	tests := []struct {
		name string
		fss  Filesystems
		want string // "" for valid
	}{
		{"nfs and a partition's own", Filesystems{nfsFS("home", "/home"), nfsFS("scratch", "/scratch"), nfsFS("h100-scratch", "/scratch", "h100")}, ""},
		{"claim", Filesystems{{Name: "home", MountPath: "/home", VolumeSource: pvc}}, ""},
		{"no source", Filesystems{{Name: "home", MountPath: "/home"}}, "exactly one source"},
		{"two sources", Filesystems{{Name: "home", MountPath: "/home", VolumeSource: corev1.VolumeSource{
			NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/p"}, HostPath: &corev1.HostPathVolumeSource{Path: "/home"}}}}, "exactly one source"},
		{"not a filesystem", Filesystems{{Name: "tmp", MountPath: "/tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, "must be one of"},
		{"relative mount", Filesystems{nfsFS("home", "home")}, "clean absolute path"},
		{"root mount", Filesystems{nfsFS("root", "/")}, "clean absolute path"},
		{"unclean mount", Filesystems{nfsFS("home", "/home/../etc")}, "clean absolute path"},
		{"over the launcher", Filesystems{nfsFS("run", "/var/run")}, "launcher's"},
		{"inside the launcher", Filesystems{nfsFS("bin", "/sluice/bin")}, "launcher's"},
		{"bad name", Filesystems{nfsFS("Home_1", "/home")}, "lowercase"},
		{"name twice", Filesystems{nfsFS("home", "/home"), nfsFS("home", "/home2")}, "used twice"},
		{"mount twice", Filesystems{nfsFS("a", "/home"), nfsFS("b", "/home")}, "two filesystems mount /home cluster-wide"},
		{"mount twice in a partition", Filesystems{nfsFS("a", "/data", "h100"), nfsFS("b", "/data", "a100", "h100")}, "for partition h100"},
		{"claim without name", Filesystems{{Name: "home", MountPath: "/home", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}}}, "claimName"},
		{"nfs without server", Filesystems{{Name: "home", MountPath: "/home", VolumeSource: corev1.VolumeSource{
			NFS: &corev1.NFSVolumeSource{Path: "/x"}}}}, "server and a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.fss.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestFilesystemsForPartition(t *testing.T) {
	site := Filesystems{nfsFS("home", "/home"), nfsFS("scratch", "/scratch"), nfsFS("h100-scratch", "/scratch", "h100"), nfsFS("datasets", "/datasets", "h100", "a100")}
	tests := []struct {
		partition string
		want      []string
	}{
		{"h100", []string{"home", "h100-scratch", "datasets"}},
		{"a100", []string{"home", "scratch", "datasets"}},
		{"cpu", []string{"home", "scratch"}},
		{"", []string{"home", "scratch"}},
	}
	for _, tt := range tests {
		var got []string
		for _, fs := range site.For(tt.partition) {
			got = append(got, fs.Name)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("For(%q) = %v, want %v", tt.partition, got, tt.want)
		}
	}
}

// Every pod of a job mounts the site's filesystems at their paths, read-only where the
// site says so.
func TestFilesystemsAreMounted(t *testing.T) {
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", Nodes: 2, Tasks: 2, CPUsPerTask: 1, Script: "#!/bin/sh\n"}, 5)
	ro := nfsFS("datasets", "/datasets")
	ro.ReadOnly = true
	pods, err := BuildPods(pg, []bridge.Bind{{Node: "n0"}, {Node: "n1"}}, RunAs{LauncherImage: testLauncherImage, Image: "img",
		Filesystems: []Filesystem{nfsFS("home", "/home"), ro}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range p.Spec.Containers[0].VolumeMounts {
			mounts[m.MountPath] = m
		}
		volumes := map[string]corev1.Volume{}
		for _, v := range p.Spec.Volumes {
			volumes[v.Name] = v
		}
		for _, want := range []struct {
			path, volume, server string
			readOnly             bool
		}{{"/home", "sluice-fs-home", "nfs-home", false}, {"/datasets", "sluice-fs-datasets", "nfs-datasets", true}} {
			m, ok := mounts[want.path]
			v := volumes[want.volume]
			if !ok || m.Name != want.volume || m.ReadOnly != want.readOnly || v.NFS == nil || v.NFS.Server != want.server {
				t.Errorf("pod %s: %s mounted as %+v from %+v; want volume %s from %s, read-only %v", p.Name, want.path, m, v, want.volume, want.server, want.readOnly)
			}
		}
	}
}
