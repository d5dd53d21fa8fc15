package kube

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
)

func envOf(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

func eightGPUBinds(nodes int) []bridge.Bind {
	binds := make([]bridge.Bind, nodes)
	for i := range binds {
		// as the core writes whole GPUs: the full portion and the device's memory
		binds[i] = bridge.Bind{Node: "h100-" + string(rune('a'+i)), Group: memberName, GPUMilli: 1000, GPUMemoryMiB: 81920}
		for g := range 8 {
			binds[i].GPUs = append(binds[i].GPUs, bridge.BoundGPU{Index: int32(g), UUID: "GPU-" + string(rune('a'+i)) + string(rune('0'+g))})
		}
	}
	return binds
}

func TestBuildPodsTwoNodeGPUJob(t *testing.T) {
	d := &slurmapi.JobDesc{
		Name: "train", User: "alice", Account: "nlp", Partition: "h100", QOS: "normal",
		Script: "#!/bin/bash\ntorchrun train.py\n", Nodes: 2, Tasks: 16, TasksPerNode: 8, CPUsPerTask: 4,
		GPUs: slurmapi.GPURequest{PerNode: 8}, TimeLimit: 90 * time.Second, WorkDir: "/home/alice",
		Environment: []string{"SLURM_JOB_ID=999", "LR=0.1", SimDurationEnv + "=5s", SimExitCodeEnv + "=3", "SLUICE_TIME_LIMIT=1"},
		Signal:      "B:10@60",
	}
	pg := PodGroupFor(d, 7)
	pg.UID = "uid-7"
	start := time.Unix(1_800_000_000, 0)
	pods, err := BuildPods(pg, eightGPUBinds(2), RunAs{LauncherImage: testLauncherImage, Image: "pytorch:25", IDs: &UserIDs{UID: 1001, GID: 100}, TimeLimit: 90 * time.Second, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 {
		t.Fatalf("got %d pods, want one per node (2)", len(pods))
	}
	for i, pod := range pods {
		wantName, wantHost := []string{"job-7-0", "job-7-1"}[i], []string{"h100-a", "h100-b"}[i]
		if pod.Name != wantName || pod.Spec.Hostname != wantHost || pod.Spec.Subdomain != "job-7" || pod.Namespace != "slurm-nlp" {
			t.Errorf("pod %d: name %s hostname %s subdomain %s namespace %s", i, pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain, pod.Namespace)
		}
		if d := pod.Spec.DNSConfig; d == nil || strings.Join(d.Searches, " ") != "job-7.slurm-nlp.svc.cluster.local" {
			t.Errorf("pod %d: DNS config %+v; want the job's Service on the search path", i, d)
		}
		env := envOf(pod)
		want := map[string]string{
			"SLURM_JOB_ID": "7", "SLURM_JOB_NAME": "train", "SLURM_JOB_NODELIST": "h100-a,h100-b", "SLURM_NNODES": "2",
			"SLURM_NODEID": []string{"0", "1"}[i], "SLURM_PROCID": []string{"0", "8"}[i], "SLURM_NTASKS": "16",
			"SLURM_CPUS_PER_TASK": "4", "SLURM_SUBMIT_DIR": "/home/alice", "SLURM_JOB_PARTITION": "h100",
			"SLURM_JOB_ACCOUNT": "nlp", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "LR": "0.1",
			"NVIDIA_VISIBLE_DEVICES": "",                        // whole GPUs: the device plugin sets it
			"SLUICE_SCRIPT":          []string{d.Script, ""}[i], // only the batch host runs the script
			"SLUICE_LAUNCH_DIR":      "/sluice", "SLUICE_RUN_DIR": "/var/run/sluice", "SLUICE_LAUNCH_HOSTS": "h100-a,h100-b",
			"SLUICE_LAUNCH_PEERS":    "h100-a.job-7:6818,h100-b.job-7:6818",
			"SLUICE_LAUNCH_KEY_FILE": "/var/run/sluice-launch/key",
			// The launchers' time limit and warning (--signal), never the job's own.
			"SLUICE_TIME_LIMIT": "90", "SLUICE_JOB_START": "1800000000", "SLUICE_SIGNAL": "B:10@60",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("pod %d: %s = %q, want %q", i, k, env[k], v)
			}
		}
		c := pod.Spec.Containers[0]
		checkLauncher(t, pod, "job-7-launch")
		// The launcher enters the working directory itself, as slurmstepd does: the
		// container runtime would make a missing one, as root, on the user's filesystem.
		if c.Image != "pytorch:25" || c.WorkingDir != "" || env["SLUICE_WORKDIR"] != "/home/alice" {
			t.Errorf("pod %d: image %q, workdir %q, SLUICE_WORKDIR %q; want the launcher to enter /home/alice", i, c.Image, c.WorkingDir, env["SLUICE_WORKDIR"])
		}
		if g := c.Resources.Requests[v1alpha1.GPUResource]; g.Value() != 8 {
			t.Errorf("pod %d requests %v GPUs, want 8", i, g.String())
		}
		if g := c.Resources.Limits[v1alpha1.GPUResource]; g.Value() != 8 {
			t.Errorf("pod %d limits %v GPUs, want 8 (extended resources need limit = request)", i, g.String())
		}
		if cpu := c.Resources.Requests[corev1.ResourceCPU]; cpu.Value() != 32 {
			t.Errorf("pod %d requests %s CPUs, want 8 tasks x 4", i, cpu.String())
		}
		if sc := c.SecurityContext; *sc.Privileged || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 {
			t.Errorf("pod %d container security context %+v", i, sc)
		}
		if sc := pod.Spec.SecurityContext; *sc.RunAsUser != 1001 || *sc.RunAsGroup != 100 || !*sc.RunAsNonRoot {
			t.Errorf("pod %d security context %+v, want alice's 1001:100, non-root", i, sc)
		}
		if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds != 90 {
			t.Errorf("pod %d: restart %s deadline %v", i, pod.Spec.RestartPolicy, pod.Spec.ActiveDeadlineSeconds)
		}
		if pod.Labels[v1alpha1.JobIDLabel] != "7" || pod.Labels[v1alpha1.QueueLabel] != "nlp" || pod.Labels[SlurmPodLabel] != "true" {
			t.Errorf("pod %d labels %v", i, pod.Labels)
		}
		// the script's exit code is the batch host's; the other launchers end with 0
		wantCode := map[bool]string{true: "3", false: ""}[i == 0]
		if pod.Annotations[cluster.AnnotationSimDuration] != "5s" || pod.Annotations[cluster.AnnotationSimExitCode] != wantCode {
			t.Errorf("pod %d: the rig's simulation annotations are %v", i, pod.Annotations)
		}
		if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "uid-7" || pod.OwnerReferences[0].Kind != "PodGroup" {
			t.Errorf("pod %d owner references %+v", i, pod.OwnerReferences)
		}
	}
}

func TestBuildPodsVariants(t *testing.T) {
	base := func() *slurmapi.JobDesc {
		return &slurmapi.JobDesc{Name: "x", User: "bob", Account: "vision", Script: "#!/bin/sh\ntrue\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1}
	}
	tests := []struct {
		name    string
		desc    func() *slurmapi.JobDesc
		run     RunAs
		binds   []bridge.Bind
		check   func(t *testing.T, pod *corev1.Pod)
		wantErr string
	}{{
		name: "no image anywhere is refused", desc: base, binds: []bridge.Bind{{Node: "n"}},
		wantErr: "names no container image",
	}, {
		name: "GPU share gets the KAI fraction annotation and its portion", binds: []bridge.Bind{{Node: "n", GPUs: []bridge.BoundGPU{{Index: 3}}, GPUMilli: 250}},
		desc: func() *slurmapi.JobDesc { d := base(); d.GPUs.Fraction = 0.25; return d }, run: RunAs{LauncherImage: testLauncherImage, Image: "img"},
		check: func(t *testing.T, pod *corev1.Pod) {
			env := envOf(pod)
			if pod.Annotations[v1alpha1.GPUFractionAnnotation] != "0.25" || env["SLUICE_GPU_PORTION"] != "0.25" || env["NVIDIA_VISIBLE_DEVICES"] != "3" {
				t.Errorf("annotations %v, env %v", pod.Annotations, env)
			}
			if _, whole := pod.Spec.Containers[0].Resources.Requests[v1alpha1.GPUResource]; whole {
				t.Error("a GPU share must not request whole nvidia.com/gpu")
			}
		},
	}, {
		name: "a job's own environment cannot choose or widen its GPUs", binds: []bridge.Bind{{Node: "n", GPUs: []bridge.BoundGPU{{Index: 0, UUID: "GPU-a"}}, GPUMilli: 1000}},
		desc: func() *slurmapi.JobDesc {
			d := base()
			d.Environment = []string{"NVIDIA_VISIBLE_DEVICES=all", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
				"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=80G", "SLUICE_GPU_PORTION=1", "LR=0.1"}
			return d
		}, run: RunAs{LauncherImage: testLauncherImage, Image: "img"},
		check: func(t *testing.T, pod *corev1.Pod) {
			for _, e := range pod.Spec.Containers[0].Env {
				if (e.Name == "NVIDIA_VISIBLE_DEVICES" && e.Value == "all") || e.Name == "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" ||
					e.Name == "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" || e.Name == "SLUICE_GPU_PORTION" || (e.Name == "CUDA_VISIBLE_DEVICES" && e.Value == "0,1,2,3,4,5,6,7") {
					t.Errorf("the job's own %s=%s reached the pod", e.Name, e.Value)
				}
			}
			if env := envOf(pod); env["LR"] != "0.1" {
				t.Errorf("the job's own LR=0.1 was dropped: %v", env)
			}
		},
	}, {
		name: "CPU job sees no GPU, no deadline, no simulation", binds: []bridge.Bind{{Node: "n"}}, desc: base, run: RunAs{LauncherImage: testLauncherImage, Image: "img"},
		check: func(t *testing.T, pod *corev1.Pod) {
			env := envOf(pod)
			if env["NVIDIA_VISIBLE_DEVICES"] != "void" || env["CUDA_VISIBLE_DEVICES"] != "" ||
				pod.Spec.ActiveDeadlineSeconds != nil || pod.Annotations[SimDurationAnnotation] != "" || env["SLURM_SUBMIT_DIR"] != "/" {
				t.Errorf("env %v, deadline %v, annotations %v", env, pod.Spec.ActiveDeadlineSeconds, pod.Annotations)
			}
		},
	}, {
		name: "array task carries its array ids", binds: []bridge.Bind{{Node: "n"}}, desc: base, run: RunAs{LauncherImage: testLauncherImage, Image: "img"},
		check: func(t *testing.T, pod *corev1.Pod) {
			if env := envOf(pod); env["SLURM_ARRAY_JOB_ID"] != "40" || env["SLURM_ARRAY_TASK_ID"] != "2" {
				t.Errorf("env %v", env)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := PodGroupFor(tc.desc(), 41)
			if strings.HasPrefix(tc.name, "array") {
				aj, at := int64(40), int32(2)
				pg.Spec.Slurm.ArrayJobID, pg.Spec.Slurm.ArrayTaskID = &aj, &at
			}
			pods, err := BuildPods(pg, tc.binds, tc.run)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, pods[0])
		})
	}
}

func TestPodNameChangesWithRequeue(t *testing.T) {
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", Nodes: 1, Tasks: 1, CPUsPerTask: 1}, 5)
	if got := PodName(pg, 1); got != "job-5-1" {
		t.Errorf("first run: %s", got)
	}
	pg.Status.Requeues = 2
	if got := PodName(pg, 1); got != "job-5-r2-1" {
		t.Errorf("after two requeues: %s", got)
	}
}

// testLauncherImage is the sluice image the tests' pods install from.
const testLauncherImage = "sluice:test"

// checkLauncher checks that pod runs the launcher without touching the
// job's image: an init container of the sluice image installs it into a
// volume the job container runs it from; a multi-node job's pods (and only
// they) mount the job's launch key Secret and declare the launcher port.
func checkLauncher(t *testing.T, pod *corev1.Pod, secret string) {
	t.Helper()
	spec := pod.Spec
	if len(spec.InitContainers) != 1 {
		t.Fatalf("pod %s: %d init containers, want the launcher's", pod.Name, len(spec.InitContainers))
	}
	ic, c := spec.InitContainers[0], spec.Containers[0]
	if ic.Image != testLauncherImage || strings.Join(ic.Command, " ") != "/sluice install-launcher /launcher" {
		t.Errorf("pod %s: init container %s %v", pod.Name, ic.Image, ic.Command)
	}
	if len(c.Command) < 2 || c.Command[0] != "/sluice/sluice" || c.Command[1] != "launch" {
		t.Errorf("pod %s: command %v, want /sluice/sluice launch ...", pod.Name, c.Command)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["sluice-launcher"] != "/sluice" || ic.VolumeMounts[0].Name != "sluice-launcher" {
		t.Errorf("pod %s: launcher volume not shared: init %v, job %v", pod.Name, ic.VolumeMounts, c.VolumeMounts)
	}
	var secretVol string
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secretVol = v.Secret.SecretName
		}
	}
	if secretVol != secret || (secret != "") != (mounts["sluice-launch-key"] == "/var/run/sluice-launch") {
		t.Errorf("pod %s: launch key Secret %q mounted at %q, want %q", pod.Name, secretVol, mounts["sluice-launch-key"], secret)
	}
	if (secret != "") != (len(c.Ports) == 1 && c.Ports[0].ContainerPort == 6818) {
		t.Errorf("pod %s: ports %v", pod.Name, c.Ports)
	}
}

// TestRunScriptUsesShebang runs the pod's command in a real shell: the
// script is run by its own interpreter, with the job's arguments, and its
// output is the container's stdout (the pod log).
func TestRunScriptUsesShebang(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", Name: "echo", Nodes: 1, Tasks: 1, CPUsPerTask: 1,
		Script: "#!/bin/bash\necho \"job $SLURM_JOB_ID on ${BASH_VERSION:+bash} args $*\"\n[ -z \"$SLUICE_SCRIPT\" ] && echo clean\n"}, 12)
	pg.Spec.Slurm.Argv = []string{"a b", "c"}
	pods, err := BuildPods(pg, []bridge.Bind{{Node: "n"}}, RunAs{LauncherImage: testLauncherImage, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	checkLauncher(t, pods[0], "")
	if got, want := runPodCommand(t, pods[0]), "job 12 on bash args a b c\nclean\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// runPodCommand runs a pod as a local process (launchtest) and returns
// what it wrote, stdout then stderr.
func runPodCommand(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	return runPodWith(t, pod)
}

// TestRunScriptReadsInput: --input is the script's standard input, its
// pattern expanded and relative to the submit directory (sbatch(1)).
func TestRunScriptReadsInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/in-12.txt", []byte("from the input file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", Name: "cat", Nodes: 1, Tasks: 1, CPUsPerTask: 1,
		Stdin: "in-%j.txt", WorkDir: dir, Stdout: "/dev/null", Script: "#!/bin/sh\nread line; echo \"got: $line\" >&2\n"}, 12)
	pods, err := BuildPods(pg, []bridge.Bind{{Node: "n"}}, RunAs{LauncherImage: testLauncherImage, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runPodCommand(t, pods[0]), "got: from the input file\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// BenchmarkBuildPods is the factory's CPU cost of starting one 2-node,
// 8-GPU-per-node job (the scheduler's bind worker pays it).
func BenchmarkBuildPods(b *testing.B) {
	pg := PodGroupFor(&slurmapi.JobDesc{Name: "train", User: "alice", Account: "nlp", Partition: "h100",
		Script: "#!/bin/bash\ntorchrun train.py\n", Nodes: 2, Tasks: 16, CPUsPerTask: 4,
		GPUs: slurmapi.GPURequest{PerNode: 8}, Environment: []string{"PATH=/bin", "LR=0.1"}}, 7)
	binds := eightGPUBinds(2)
	run := RunAs{LauncherImage: testLauncherImage, Image: "img", TimeLimit: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildPods(pg, binds, run); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBuildPodsNeverRootByOmission: a job's pods run as the identity given,
// non-root unless the site mapped the user to uid 0; with none given, as
// nobody; Strict supplemental groups only when asked for.
func TestBuildPodsNeverRootByOmission(t *testing.T) {
	tests := []struct {
		name     string
		run      RunAs
		uid, gid int64
		nonRoot  bool
		strict   bool
	}{
		{"mapped user", RunAs{LauncherImage: testLauncherImage, IDs: &UserIDs{UID: 1001, GID: 100}}, 1001, 100, true, false},
		{"no identity given runs as nobody", RunAs{LauncherImage: testLauncherImage}, 65534, 65534, true, false},
		{"a user the site maps to root", RunAs{LauncherImage: testLauncherImage, IDs: &UserIDs{UID: 0, GID: 0}}, 0, 0, false, false},
		{"root group alone is not root", RunAs{LauncherImage: testLauncherImage, IDs: &UserIDs{UID: 1001, GID: 0}}, 1001, 0, true, false},
		{"nodes that support it get Strict groups", RunAs{LauncherImage: testLauncherImage, IDs: &UserIDs{UID: 1001, GID: 100}, StrictGroups: true}, 1001, 100, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := PodGroupFor(&slurmapi.JobDesc{User: "u", Account: "a", Script: "#!/bin/sh\ntrue\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1}, 3)
			tc.run.Image = "img"
			pods, err := BuildPods(pg, []bridge.Bind{{Node: "n"}}, tc.run)
			if err != nil {
				t.Fatal(err)
			}
			sc := pods[0].Spec.SecurityContext
			if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil {
				t.Fatalf("pod security context %+v: want runAsUser and runAsGroup set", sc)
			}
			if *sc.RunAsUser != tc.uid || *sc.RunAsGroup != tc.gid {
				t.Errorf("runs as %d:%d, want %d:%d", *sc.RunAsUser, *sc.RunAsGroup, tc.uid, tc.gid)
			}
			if got := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot; got != tc.nonRoot {
				t.Errorf("runAsNonRoot %v, want %v", got, tc.nonRoot)
			}
			strict := sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy == corev1.SupplementalGroupsPolicyStrict
			if strict != tc.strict {
				t.Errorf("supplementalGroupsPolicy %v, want Strict: %v", sc.SupplementalGroupsPolicy, tc.strict)
			}
			if c := pods[0].Spec.Containers[0].SecurityContext; c.RunAsUser != nil || c.RunAsNonRoot != nil {
				t.Errorf("the container overrides the pod's identity: %+v", c)
			}
		})
	}
}

// TestBuildPodsRestartCount: a requeued job's new run sees SLURM_RESTART_COUNT, as on
// Slurm, so its script can resume from a checkpoint; a first run has none.
func TestBuildPodsRestartCount(t *testing.T) {
	for _, tc := range []struct {
		requeues int32
		want     string
	}{{0, ""}, {1, "1"}, {3, "3"}} {
		pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", Name: "x", Nodes: 1, Tasks: 1, CPUsPerTask: 1, Script: "#!/bin/sh\ntrue\n"}, 12)
		pg.Status.Requeues = tc.requeues
		pods, err := BuildPods(pg, []bridge.Bind{{Node: "n"}}, RunAs{LauncherImage: testLauncherImage, Image: "img"})
		if err != nil {
			t.Fatal(err)
		}
		if got := envOf(pods[0])["SLURM_RESTART_COUNT"]; got != tc.want {
			t.Errorf("after %d requeues SLURM_RESTART_COUNT=%q, want %q", tc.requeues, got, tc.want)
		}
	}
}
