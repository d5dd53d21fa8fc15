package kube

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// A submitted job's own variables reach its script from the environment
// Secret, not from the pod spec: the spec shows none of their values, the
// file leaves out what Sluice sets (a job's environment never overrides
// it), exported bash functions survive, and the pod run as a local process
// sees the variables.
func TestJobEnvironmentFromSecret(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", User: "alice", Name: "env", Nodes: 1, Tasks: 1, CPUsPerTask: 1,
		Environment: []string{"SECRET_TOKEN=s3cr3t-value", "PATH=/usr/bin:/bin", "SLURM_TASKS_PER_NODE=9",
			"SLUICE_LAUNCH_HOSTS=elsewhere", "NVIDIA_VISIBLE_DEVICES=all", "BASH_FUNC_greet%%=() {  echo \"hello $1\"\n}",
			SimDurationEnv + "=1s"},
		Script: "#!/bin/bash\necho \"$SECRET_TOKEN $SLURM_TASKS_PER_NODE $SLUICE_LAUNCH_HOSTS\"\ngreet world\n"}, 12)
	pg.Namespace = "slurm-a"
	pods, own := sealedJobPods(t, pg)
	sec, sum, err := environmentSecret(pg, pods, own, sealSeed)
	if err != nil || sec == nil {
		t.Fatalf("no environment Secret: %v", err)
	}
	mountEnvironment(pods, sec.Name, sum)

	if sec.Name != "job-12-env-"+sum[:10] || sec.Immutable == nil || !*sec.Immutable {
		t.Errorf("Secret %s (immutable %v)", sec.Name, sec.Immutable)
	}
	var file launch.UserEnvironment
	if err := json.Unmarshal(sec.Data[EnvSecretField], &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Variables) != 3 || file.Variables["SECRET_TOKEN"] != "s3cr3t-value" || file.Variables["PATH"] != "/usr/bin:/bin" ||
		file.Variables["BASH_FUNC_greet%%"] == "" || file.Salt == "" {
		t.Errorf("file holds %v, want only the job's own variables Sluice does not set", file.Variables)
	}
	spec, _ := json.Marshal(pods[0])
	if strings.Contains(string(spec), "s3cr3t-value") || strings.Contains(string(spec), "hello") {
		t.Errorf("the pod spec shows the job's variables: %s", spec)
	}
	if !strings.Contains(string(spec), SimDurationEnv) {
		t.Error("the simulation knob left the pod spec")
	}
	checkEnvMount(t, pods[0], sec.Name)

	got := runPodWith(t, pods[0], sec)
	if want := "s3cr3t-value 1 n\nhello world\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// checkEnvMount: the pod mounts the environment Secret read-only, readable by
// the job's user, and tells the launcher where its file is.
func checkEnvMount(t *testing.T, pod *corev1.Pod, secret string) {
	t.Helper()
	var vol *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode != 0o444 {
		t.Fatalf("pod %s: no volume of Secret %s with mode 0444: %+v", pod.Name, secret, pod.Spec.Volumes)
	}
	c := pod.Spec.Containers[0]
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == vol.Name && m.ReadOnly && m.MountPath == envDir)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if !mounted || env[launch.EnvUserEnvFile] != envDir+"/"+EnvSecretField || len(env[launch.EnvUserEnvSHA256]) != 64 {
		t.Errorf("pod %s: mounts %+v, env file %q sum %q", pod.Name, c.VolumeMounts, env[launch.EnvUserEnvFile], env[launch.EnvUserEnvSHA256])
	}
}

// runPodWith is runPodCommand with the Secrets the pod mounts.
func runPodWith(t *testing.T, pod *corev1.Pod, secrets ...*corev1.Secret) string {
	t.Helper()
	node := launchtest.Start(t, []*corev1.Pod{pod}, "", secrets...)[0]
	if rc := node.Wait(); rc != 0 {
		t.Fatalf("exit %d: %q", rc, node.Stderr().All())
	}
	var b strings.Builder
	for _, l := range append(node.Stdout().All(), node.Stderr().All()...) {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// A job with nothing of its own to export gets no Secret and no mount.
func TestJobWithoutOwnEnvironmentGetsNoSecret(t *testing.T) {
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", User: "alice", Nodes: 1, Tasks: 1, CPUsPerTask: 1,
		Environment: []string{"SLURM_JOB_ID=7"}, Script: "#!/bin/sh\ntrue\n"}, 12)
	pods, own := sealedJobPods(t, pg)
	if sec, _, err := environmentSecret(pg, pods, own, sealSeed); sec != nil || err != nil {
		t.Errorf("Secret %v (%v) for a job whose only variable Sluice sets", sec, err)
	}
	if pg.Spec.Slurm.Environment != nil {
		t.Errorf("environment %v", pg.Spec.Slurm.Environment)
	}
}

// sealedJobPods seals pg's environment as the server does at submit, builds its pods on
// one node and opens the environment again, as the pod factory does.
func sealedJobPods(t *testing.T, pg *v1alpha1.PodGroup) ([]*corev1.Pod, map[string]string) {
	t.Helper()
	if err := sealPodGroupEnvironment(pg, sealSeed, nil); err != nil {
		t.Fatal(err)
	}
	pods, err := BuildPods(pg, []bridge.Bind{{Node: "n"}}, RunAs{LauncherImage: testLauncherImage, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	own, err := openPodGroupEnvironment(pg, sealSeed)
	if err != nil {
		t.Fatal(err)
	}
	return pods, own
}
