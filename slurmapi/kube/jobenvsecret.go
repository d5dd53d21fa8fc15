package kube

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

const (
	// envDir is where the job's environment Secret is mounted.
	envDir = "/var/run/sluice-env"
	// EnvSecretField is the environment file's field in the Secret
	// (launch.UserEnvironment as JSON): one field, so any variable name
	// an environment may hold survives, which Secret keys could not carry.
	EnvSecretField = "environment.json"
	// envVolume names the Secret's volume in the job's pods.
	envVolume = "sluice-env"
)

// EnvSecretName names the Secret of the job's own environment: the start
// of its file's SHA-256 (which the pods carry anyway), so a run that
// writes another file (the job's identity or nodes changed what Sluice
// sets) gets a Secret of its own, while a requeued run of the same file
// finds its Secret there.
func EnvSecretName(pg *v1alpha1.PodGroup, sum string) string {
	return pg.Name + "-env-" + sum[:10]
}

// envSalt salts the environment file under the server's key, so its
// SHA-256 in the pod spec cannot be matched against guessed values. It is
// the same for every run of the job, so a rerun's file is the same file.
func envSalt(seed []byte, pg *v1alpha1.PodGroup) string {
	m := hmac.New(sha256.New, environmentKey(seed))
	m.Write([]byte("salt\n" + pg.Namespace + "\n" + pg.Name + "\n" + string(pg.UID)))
	return hex.EncodeToString(m.Sum(nil))
}

// environmentFile is the file of the job's own variables own for its pods:
// without every name Sluice sets in any of the pods or reserves for the
// launcher and the devices (which a job's environment never overrides, as
// jobEnv ruled when the variables were in the pod spec); nil when none is
// left.
func environmentFile(pg *v1alpha1.PodGroup, pods []*corev1.Pod, own map[string]string, seed []byte) ([]byte, error) {
	set := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				set[e.Name] = true
			}
		}
	}
	vars := make(map[string]string, len(own))
	for k, v := range own {
		if !set[k] && !launcherOwned[k] && !deviceOwned[k] {
			vars[k] = v
		}
	}
	if len(vars) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a value's <, > and & as they are
	if err := enc.Encode(launch.UserEnvironment{Salt: envSalt(seed, pg), Variables: vars}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// mountEnvironment has every pod mount the environment Secret name,
// read-only, and tells the launcher where the file is and its SHA-256.
func mountEnvironment(pods []*corev1.Pod, name, sum string) {
	mode := int32(0o444) // the container runs as the job's user, not the Secret's owner
	for _, p := range pods {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: envVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: &mode}}})
		c := &p.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: envVolume, MountPath: envDir, ReadOnly: true})
		c.Env = append(c.Env, corev1.EnvVar{Name: launch.EnvUserEnvFile, Value: envDir + "/" + EnvSecretField},
			corev1.EnvVar{Name: launch.EnvUserEnvSHA256, Value: sum})
	}
}

// withEnvironment opens the job's sealed environment into its pods: the
// Secret holding the file (created, once per file, owned by the PodGroup)
// and the pods' mounts of it. An environment that does not open fails the
// start with a message naming no value of it.
func (f *PodFactory) withEnvironment(ctx context.Context, pg *v1alpha1.PodGroup, pods []*corev1.Pod) error {
	own, err := openPodGroupEnvironment(pg, f.opts.LaunchKeySeed)
	if err != nil {
		return fmt.Errorf("job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	sec, sum, err := environmentSecret(pg, pods, own, f.opts.LaunchKeySeed)
	if err != nil || sec == nil {
		return err
	}
	// The server may create Secrets, never read them: one already there
	// under this name is this job's from an earlier run (the same file), or
	// planted, which the launchers refuse (launch.EnvUserEnvSHA256).
	if err := f.c.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the environment Secret %s/%s: %w", pg.Namespace, sec.Name, err)
	}
	mountEnvironment(pods, sec.Name, sum)
	return nil
}

// environmentSecret is the immutable Secret, owned by the job's PodGroup,
// holding the environment file of own for pods (environmentFile), and the
// file's SHA-256; nil when no variable is left for the file.
func environmentSecret(pg *v1alpha1.PodGroup, pods []*corev1.Pod, own map[string]string, seed []byte) (*corev1.Secret, string, error) {
	file, err := environmentFile(pg, pods, own, seed)
	if err != nil || file == nil {
		return nil, "", err
	}
	digest := sha256.Sum256(file)
	sum := hex.EncodeToString(digest[:])
	return &corev1.Secret{
		ObjectMeta: jobObjectMeta(EnvSecretName(pg, sum), pg),
		Data:       map[string][]byte{EnvSecretField: file},
		Immutable:  ptrTo(true), // no later update swaps the variables under the job
	}, sum, nil
}
