package kube

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Names a Slurm job's pods carry and are found by.
const (
	// SlurmPodLabel marks every pod made for a Slurm job; a job's Service
	// (JobServiceName) selects on it.
	SlurmPodLabel = v1alpha1.SlurmJobPodLabel
	// NodeIndexLabel is a pod's SLURM_NODEID within its job.
	NodeIndexLabel = v1alpha1.NodeIndexLabel
	// containerName is the one container of a job's pod.
	containerName = "job"
	// scriptDir is an emptyDir the script is written to before it is run:
	// the script travels in the pod spec, so starting a job writes nothing
	// but its pods. It also holds the step counter and log.
	scriptDir = "/var/run/sluice"
	// launcherDir holds the sluice binary and srun, copied there by the
	// init container from the launcher image; the job's image needs
	// nothing of Sluice.
	launcherDir = "/sluice"
	// launcherInstallDir is where the init container sees that volume
	// (the sluice image has its binary at /sluice).
	launcherInstallDir = "/launcher"
	// launchKeyDir is where a multi-node job's launch key is mounted.
	launchKeyDir = "/var/run/sluice-launch"
	// LaunchKeyField is the launch key's field in the job's Secret.
	LaunchKeyField = "key"
)

// LaunchSecretName names the Secret holding a multi-node job's launch key
// (srun signs step launches with it); only the job's pods mount it. The
// name carries the start of the key's SHA-256 (which the pods carry
// anyway): a run started after the server's token key was rotated
// derives another key, so it gets a Secret of its own, and every pod of
// one run mounts the key its fingerprint names. A key of "" (pods built
// without one, in tests) names the bare Secret.
func LaunchSecretName(pg *v1alpha1.PodGroup, key string) string {
	if key == "" {
		return pg.Name + "-launch"
	}
	return pg.Name + "-launch-" + launchKeySHA256(key)[:10]
}

// Simulation knobs: a job whose environment sets SLUICE_SIM_DURATION (and
// optionally SLUICE_SIM_EXIT_CODE) gets the pod annotations the rig's kwok
// stages read (test/cluster/sim.go) to end the simulated container. Real
// kubelets ignore them.
const (
	SimDurationEnv        = "SLUICE_SIM_DURATION"
	SimExitCodeEnv        = "SLUICE_SIM_EXIT_CODE"
	SimMessageEnv         = "SLUICE_SIM_TERMINATION_MESSAGE" // the batch host's only
	SimDurationAnnotation = v1alpha1.SimDurationAnnotation
	SimExitCodeAnnotation = v1alpha1.SimExitCodeAnnotation
)

// PodName names pod index of a job's run: requeued runs get new names, so a
// new run never collides with the old one's pods still terminating.
func PodName(pg *v1alpha1.PodGroup, index int) string { return jobstate.PodName(pg, index) }

// RunAs is what the site decides about a job's pods beyond the job itself.
type RunAs struct {
	// Image is the container image: the job's, else its partition's default.
	Image string
	// IDs are the identity the job's user maps to (uid, gid, groups,
	// home); nil runs as NobodyIDs, so a pod is never root by omission.
	IDs *UserIDs
	// StrictGroups gives the pods supplementalGroupsPolicy Strict: the
	// container gets only the groups above, none its image's /etc/group
	// adds. Only where every node of the job supports it (the kubelet
	// refuses the pod otherwise).
	StrictGroups bool
	// TimeLimit is the job's, else its partition's default; 0 means none.
	TimeLimit time.Duration
	// Start is when the job's pods are made (the launchers' warning
	// signal counts from it); zero: from each launcher's own start.
	Start time.Time
	// Filesystems are the site's filesystems the job's pods mount.
	Filesystems []Filesystem
	// LauncherImage is the sluice image the init container copies the
	// launcher (and srun) from.
	LauncherImage string
	// LaunchKey is the job's launch key (LaunchKey) when its pods serve
	// launches: the pods carry its SHA-256 to check the mounted key with.
	LaunchKey string
	// ClusterDomain is the cluster's DNS domain; "" is DefaultClusterDomain.
	ClusterDomain string
	// InactiveLimit is an allocation's launch.EnvInactiveLimit; 0 leaves
	// the launcher's default.
	InactiveLimit time.Duration
	// GPUDeviceClass is the partition's (v1alpha1.PartitionSpec): the pods
	// claim their GPUs from it (GPUClaims) instead of asking nvidia.com/gpu.
	GPUDeviceClass string
}

// ServesLaunches reports whether the pods of pg on nodes nodes run a
// launcher that serves step launches and attaches (port 6818, the launch
// key): a multi-node job's, for srun, and an allocation's (a job with no
// script, from job/allocate), for attaches. A one-node batch job runs
// its steps locally and needs neither.
func ServesLaunches(pg *v1alpha1.PodGroup, nodes int) bool {
	return nodes > 1 || IsAllocation(pg)
}

// IsAllocation reports whether pg is an allocation (job/allocate: salloc,
// srun from a user's shell): a Slurm job with no batch script.
func IsAllocation(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm != nil && pg.Spec.Slurm.Script == ""
}

// BuildPods makes a Slurm job's pods, one per bind (one per node). The
// scheduler then sets node, scheduler name and group annotations.
func BuildPods(pg *v1alpha1.PodGroup, binds []bridge.Bind, run RunAs) ([]*corev1.Pod, error) {
	s := pg.Spec.Slurm
	if s == nil {
		return nil, fmt.Errorf("PodGroup %s/%s is not a Slurm job (no spec.slurm)", pg.Namespace, pg.Name)
	}
	if len(pg.Spec.Members) == 0 {
		return nil, fmt.Errorf("PodGroup %s/%s describes no members", pg.Namespace, pg.Name)
	}
	if run.Image == "" {
		return nil, fmt.Errorf("job %s names no container image and its partition %q has no defaultImage", pg.Labels[v1alpha1.JobIDLabel], pg.Spec.Partition)
	}
	if run.LauncherImage == "" {
		return nil, fmt.Errorf("job %s: no launcher image configured (slurm.launcherImage)", pg.Labels[v1alpha1.JobIDLabel])
	}
	hosts, rank := jobHosts(pg, binds)
	member := pg.Spec.Members[0]
	pods := make([]*corev1.Pod, len(binds))
	batch := 0 // binds[batch] is node 0, the batch host
	for i := range binds {
		pods[i] = buildPod(pg, member, &binds[i], rank[i], hosts, run)
		if rank[i] == 0 {
			batch = i
		}
	}
	if len(pods) > 0 && !IsAllocation(pg) {
		// Only the batch host runs the script and writes the output
		// files, as in Slurm; the other pods run the launcher only.
		c := &pods[batch].Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: launch.EnvScript, Value: s.Script})
		if m := s.Environment[SimMessageEnv]; m != "" && s.Environment[SimDurationEnv] != "" {
			pods[batch].Annotations[v1alpha1.SimMessageAnnotation] = m
		}
		// Simulated, as on a real cluster: the script's exit code is the batch
		// host's; the other nodes' launchers end with 0 when it ends (a peer
		// failing first would end the job before its batch host reported).
		for i, p := range pods {
			if i != batch {
				delete(p.Annotations, SimExitCodeAnnotation)
			}
		}
		stdout, stderr := outputFiles(pg, binds[batch].Node)
		if stdout != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: launch.EnvStdout, Value: stdout})
		}
		if stderr != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: launch.EnvStderr, Value: stderr})
		}
		if stdin := inputFile(pg, binds[batch].Node); stdin != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: launch.EnvStdin, Value: stdin})
		}
	}
	return pods, nil
}

// outputFiles are the batch script's --output and --error paths with
// sbatch's patterns expanded and relative paths under the submit
// directory; without --output, sbatch's slurm-%j.out there. A job with
// neither --output nor a working directory writes only to the pod log.
// No --error (or one equal to --output) leaves stderr with stdout.
func outputFiles(pg *v1alpha1.PodGroup, node string) (stdout, stderr string) {
	s := pg.Spec.Slurm
	f := filenameFields(pg, node)
	path := func(pattern string) string { return sbatch.ExpandPath(pattern, s.WorkingDirectory, f) }
	out := s.StandardOutput
	if out == "" {
		if s.WorkingDirectory == "" {
			return "", ""
		}
		out = sbatch.DefaultOutput(f.ArrayTaskID != nil)
	}
	stdout = path(out)
	if s.StandardError != "" && path(s.StandardError) != stdout {
		stderr = path(s.StandardError)
	}
	return stdout, stderr
}

// filenameFields are what sbatch's filename patterns expand to for the
// job's run on node.
func filenameFields(pg *v1alpha1.PodGroup, node string) sbatch.FilenameFields {
	s := pg.Spec.Slurm
	f := sbatch.FilenameFields{JobID: v1alpha1.JobIDOf(pg.Labels), Name: s.Name, User: s.User, Node: node}
	if s.ArrayJobID != nil && s.ArrayTaskID != nil {
		task := int(*s.ArrayTaskID)
		f.ArrayJobID, f.ArrayTaskID = uint32(*s.ArrayJobID), &task
	}
	return f
}

// inputFile is the batch script's --input with sbatch's patterns
// expanded, relative to the submit directory; "" for none.
func inputFile(pg *v1alpha1.PodGroup, node string) string {
	s := pg.Spec.Slurm
	if s.StandardInput == "" {
		return ""
	}
	f := filenameFields(pg, node)
	return sbatch.ExpandPath(s.StandardInput, s.WorkingDirectory, f)
}

func buildPod(pg *v1alpha1.PodGroup, m v1alpha1.MemberSet, b *bridge.Bind, index int, hosts []string, run RunAs) *corev1.Pod {
	s := pg.Spec.Slurm
	labels := map[string]string{
		v1alpha1.JobIDLabel: pg.Labels[v1alpha1.JobIDLabel], v1alpha1.QueueLabel: pg.Spec.Queue,
		SlurmPodLabel: "true", NodeIndexLabel: v1alpha1.FormatNodeIndex(index),
	}
	if pg.Spec.Partition != "" {
		labels[v1alpha1.PartitionLabel] = pg.Spec.Partition
	}
	ann := map[string]string{}
	if d := s.Environment[SimDurationEnv]; d != "" {
		ann[SimDurationAnnotation] = d
		if c := s.Environment[SimExitCodeEnv]; c != "" {
			ann[SimExitCodeAnnotation] = c
		}
	}
	if g := m.GPUSharing; g != nil && g.Fraction != "" {
		ann[v1alpha1.GPUFractionAnnotation] = g.Fraction
	}
	never, no := corev1.RestartPolicyNever, false
	secure := &corev1.SecurityContext{
		Privileged: &no, AllowPrivilegeEscalation: &no,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	c := corev1.Container{
		Name: containerName, Image: run.Image,
		// The launcher runs the batch script on node 0 and serves step
		// launches on every node (slurmapi/launch).
		Command:   append([]string{launcherDir + "/sluice", "launch"}, s.Argv...),
		Env:       append(append(jobEnv(pg, b, index, hosts, run), launcherEnv(pg, hosts, run.LaunchKey)...), limitEnv(pg, run)...),
		Resources: corev1.ResourceRequirements{Requests: m.Resources.DeepCopy(), Limits: limits(m.Resources)},
		VolumeMounts: []corev1.VolumeMount{{Name: "sluice-script", MountPath: scriptDir},
			{Name: "sluice-launcher", MountPath: launcherDir, ReadOnly: true}},
		SecurityContext:          secure,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile, // the batch host's step report
	}
	install := corev1.Container{
		Name: "sluice-launcher", Image: run.LauncherImage,
		Command:      []string{"/sluice", "install-launcher", launcherInstallDir},
		VolumeMounts: []corev1.VolumeMount{{Name: "sluice-launcher", MountPath: launcherInstallDir}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		SecurityContext: secure.DeepCopy(),
	}
	volumes := []corev1.Volume{{Name: "sluice-script", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(1<<20, resource.BinarySI)}}},
		{Name: "sluice-launcher", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(512<<20, resource.BinarySI)}}}}
	if ServesLaunches(pg, len(hosts)) {
		// Step launches come in on the launcher's port, signed with the
		// job's key, which only the job's pods mount.
		c.Ports = []corev1.ContainerPort{{Name: "sluice-launch", ContainerPort: launch.Port, Protocol: corev1.ProtocolTCP}}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "sluice-launch-key", MountPath: launchKeyDir, ReadOnly: true})
		mode := int32(0o444) // the container runs as the job's user, not the Secret's owner
		volumes = append(volumes, corev1.Volume{Name: "sluice-launch-key", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: LaunchSecretName(pg, run.LaunchKey), DefaultMode: &mode}}})
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: PodName(pg, index), Namespace: pg.Namespace, Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			RestartPolicy: never, Hostname: hosts[index],
			SecurityContext:              podSecurity(run),
			InitContainers:               []corev1.Container{install},
			Containers:                   []corev1.Container{c},
			Volumes:                      volumes,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
		},
	}
	mountFilesystems(pod, run.Filesystems)
	claimGPUs(pod, run.GPUDeviceClass)
	if ServesLaunches(pg, len(hosts)) {
		pod.Spec.Subdomain, pod.Spec.DNSConfig = jobDNS(pg, run)
	}
	if pg.UID != "" { // deleting the job's PodGroup deletes its pods (garbage collector)
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup", Name: pg.Name, UID: pg.UID}}
	}
	if run.TimeLimit > 0 {
		// A real kubelet ends the pod at the limit (DeadlineExceeded);
		// the lifecycle controller enforces it where none does (kwok).
		secs := int64(math.Ceil(run.TimeLimit.Seconds()))
		pod.Spec.ActiveDeadlineSeconds = &secs
	}
	return pod
}

// podSecurity runs the pod as the job's user: runAsNonRoot unless the site
// mapped the user to uid 0, so an image cannot make it root either.
func podSecurity(run RunAs) *corev1.PodSecurityContext {
	ids := NobodyIDs
	if run.IDs != nil {
		ids = *run.IDs
	}
	sc := &corev1.PodSecurityContext{RunAsUser: &ids.UID, RunAsGroup: &ids.GID,
		// The user's groups, as on a Slurm node: group-shared files on the
		// site's filesystems are theirs to read.
		SupplementalGroups: append([]int64(nil), ids.Groups...)}
	if ids.UID != 0 {
		nonRoot := true
		sc.RunAsNonRoot = &nonRoot
	}
	if run.StrictGroups {
		strict := corev1.SupplementalGroupsPolicyStrict
		sc.SupplementalGroupsPolicy = &strict
	}
	return sc
}

// limits are the requests a kubelet must also cap: memory and extended
// resources (GPUs must have limit = request); CPU stays burstable.
func limits(req corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range req {
		if name != corev1.ResourceCPU {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// launcherEnv tells the launcher and srun where they are (launch.JobFromEnv).
func launcherEnv(pg *v1alpha1.PodGroup, hosts []string, key string) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: launch.EnvDir, Value: launcherDir}, {Name: launch.EnvRunDir, Value: scriptDir},
		{Name: launch.EnvHosts, Value: strings.Join(hosts, ",")}}
	if d := pg.Spec.Slurm.WorkingDirectory; d != "" {
		env = append(env, corev1.EnvVar{Name: launch.EnvWorkDir, Value: d})
	}
	if IsAllocation(pg) {
		env = append(env, corev1.EnvVar{Name: launch.EnvAllocation, Value: "1"})
	}
	if !ServesLaunches(pg, len(hosts)) {
		return env
	}
	if key != "" {
		env = append(env, corev1.EnvVar{Name: launch.EnvKeySHA256, Value: launchKeySHA256(key)})
	}
	peers := make([]string, len(hosts))
	for i, h := range hosts {
		peers[i] = h + "." + JobServiceName(pg) + ":" + strconv.Itoa(launch.Port)
	}
	return append(env, corev1.EnvVar{Name: launch.EnvPeers, Value: strings.Join(peers, ",")},
		corev1.EnvVar{Name: launch.EnvKeyFile, Value: launchKeyDir + "/" + LaunchKeyField})
}

// limitEnv tells the launchers the job's time limit and warning signal
// (launch.EnvTimeLimit, EnvJobStart, EnvSignal). The kubelet ends the
// pods at the limit; the launchers pass its SIGTERM to every task and
// send the warning before it.
func limitEnv(pg *v1alpha1.PodGroup, run RunAs) []corev1.EnvVar {
	if run.TimeLimit <= 0 {
		return nil
	}
	env := []corev1.EnvVar{{Name: launch.EnvTimeLimit, Value: strconv.FormatInt(int64(math.Ceil(run.TimeLimit.Seconds())), 10)}}
	if !run.Start.IsZero() {
		env = append(env, corev1.EnvVar{Name: launch.EnvJobStart, Value: strconv.FormatInt(run.Start.Unix(), 10)})
	}
	if v := pg.Annotations[SignalAnnotation]; v != "" {
		if sig, err := sbatch.ParseSignal(v); err == nil { // written by the server; another value is not a signal
			env = append(env, corev1.EnvVar{Name: launch.EnvSignal, Value: sig.String()})
		}
	}
	return env
}
