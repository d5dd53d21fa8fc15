package kube

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A submitted environment is the user's alone (docs/security.md): the
// server seals it at submit into spec.slurm.sealedEnvironment, which
// readers of PodGroups and of the submit batches cannot open, and the pod
// factory opens it when the job starts into a Secret only the job's pods
// mount (jobenvsecret.go). Both derive the key from the server's token
// key, which every replica shares.

// envKeyLabel derives the environment key from the seed; v1 names this
// format (AES-256-GCM, nonce first, JSON inside).
const envKeyLabel = "sluice environment key v1"

// plainEnvironment are the submitted variables that stay readable in
// spec.slurm.environment because Sluice itself reads them there and they
// are no secret of the user: the simulation knobs the rig's kwok stages
// act on (pods.go) and sbatch's nice value (jobenv.go). The job's tasks
// get them as before. The other SLURM_* variables Sluice interprets
// (SLURM_OPEN_MODE, SLURM_CLUSTER_NAME, SLURM_SUBMIT_HOST, the counts)
// come from the submission's options, recorded in SubmitEnvAnnotation.
var plainEnvironment = map[string]bool{
	SimDurationEnv: true, SimExitCodeEnv: true, SimMessageEnv: true,
	"SLURM_PRIO_PROCESS": true,
}

// tokenEnv is the variable sbatch and the CLI read the user's token from.
const tokenEnv = "SLURM_JWT"

// environmentKey is the AES-256 key of sealed environments under seed.
func environmentKey(seed []byte) []byte {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(envKeyLabel))
	return m.Sum(nil)
}

// envAAD binds a sealed environment to the namespace and user of its job:
// a blob copied into another user's job, or another namespace, does not open.
func envAAD(namespace, user string) []byte {
	return []byte(envKeyLabel + "\n" + namespace + "\n" + user)
}

func envAEAD(seed []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(environmentKey(seed))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealEnvironment seals env for user's job in namespace: base64 of the
// nonce and the ciphertext of env as JSON.
func sealEnvironment(seed []byte, namespace, user string, env map[string]string) (string, error) {
	plain, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	aead, err := envAEAD(seed)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, envAAD(namespace, user))), nil
}

// errEnvironmentSealed is why a sealed environment does not open; it names
// no value of it, so it may go into events and conditions.
var errEnvironmentSealed = errors.New("its submitted environment does not open with the server's token key: " +
	"the key was rotated since the job was submitted, or the sealed environment was altered or copied from another user's job; " +
	"cancel the job and submit it again")

// openEnvironment opens what sealEnvironment sealed for the same seed,
// namespace and user.
func openEnvironment(seed []byte, namespace, user, sealed string) (map[string]string, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return nil, errEnvironmentSealed
	}
	aead, err := envAEAD(seed)
	if err != nil {
		return nil, err
	}
	if len(raw) < aead.NonceSize() {
		return nil, errEnvironmentSealed
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], envAAD(namespace, user))
	if err != nil {
		return nil, errEnvironmentSealed
	}
	var env map[string]string
	if err := json.Unmarshal(plain, &env); err != nil {
		return nil, errEnvironmentSealed
	}
	return env, nil
}

// sealPodGroupEnvironment keeps in pg's spec.slurm.environment only the
// plainEnvironment variables and seals the others into sealedEnvironment,
// dropping tokens first: SLURM_JWT, and every value isToken recognises
// (a token this server issued). A token is never stored, sealed or not.
func sealPodGroupEnvironment(pg *v1alpha1.PodGroup, seed []byte, isToken func(string) bool) error {
	s := pg.Spec.Slurm
	if s == nil || len(s.Environment) == 0 {
		return nil
	}
	plain, own := map[string]string{}, map[string]string{}
	for k, v := range s.Environment {
		switch {
		case k == tokenEnv || (isToken != nil && isToken(v)):
		case plainEnvironment[k]:
			plain[k] = v
		default:
			own[k] = v
		}
	}
	s.Environment, s.SealedEnvironment = nil, ""
	if len(plain) > 0 {
		s.Environment = plain
	}
	if len(own) == 0 {
		return nil
	}
	sealed, err := sealEnvironment(seed, pg.Namespace, s.User, own)
	if err != nil {
		return fmt.Errorf("seal the job's environment: %w", err)
	}
	s.SealedEnvironment = sealed
	return nil
}

// openPodGroupEnvironment is the sealed part of pg's submitted
// environment; nil if it has none.
func openPodGroupEnvironment(pg *v1alpha1.PodGroup, seed []byte) (map[string]string, error) {
	s := pg.Spec.Slurm
	if s == nil || s.SealedEnvironment == "" {
		return nil, nil
	}
	return openEnvironment(seed, pg.Namespace, s.User, s.SealedEnvironment)
}
