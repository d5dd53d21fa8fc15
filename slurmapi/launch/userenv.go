package launch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// The job's own environment (what sbatch exported) does not travel in the
// pod spec, where everyone who may read pods in the namespace would read
// it: the pod factory writes it to a Secret only the job's pods mount, and
// the launcher reads it from there (docs/security.md).
const (
	// EnvUserEnvFile is the mounted file holding the job's own variables
	// (UserEnvironment as JSON); unset when the job exported none.
	EnvUserEnvFile = "SLUICE_ENV_FILE"
	// EnvUserEnvSHA256 is the SHA-256 (hex) of that file as the server
	// wrote it, which the pod spec carries: a Secret planted under its name
	// is refused rather than used.
	EnvUserEnvSHA256 = "SLUICE_ENV_SHA256"
)

// UserEnvironment is the content of EnvUserEnvFile.
type UserEnvironment struct {
	// Salt makes the file's SHA-256, which the pod spec shows, say nothing
	// of its variables (the server derives it from its key).
	Salt string `json:"salt"`
	// Variables are the job's own variables, none of them one Sluice sets
	// in the pod spec; names may be any an environment holds, such as
	// exported bash functions (BASH_FUNC_module%%).
	Variables map[string]string `json:"variables"`
}

// controlVars are the launcher's own variables: a job's environment never
// sets them, whatever its file says.
var controlVars = map[string]bool{EnvDir: true, EnvRunDir: true, EnvHosts: true, EnvPeers: true, EnvAddr: true,
	EnvKeyFile: true, EnvTerminationLog: true, EnvScript: true, EnvStdout: true, EnvStderr: true, EnvStdin: true,
	EnvWorkDir: true, EnvAllocation: true, EnvKeySHA256: true, EnvTimeLimit: true, EnvJobStart: true, EnvSignal: true,
	EnvOpenMode: true, EnvInactiveLimit: true, EnvUserEnvFile: true, EnvUserEnvSHA256: true}

// readUserEnv reads the job's own variables from EnvUserEnvFile, checked
// against EnvUserEnvSHA256, as NAME=value; none when the pod has no file.
// A file that is missing, unreadable or not the server's fails the
// launcher: a job must not run without the environment it was submitted
// with, nor with another.
func readUserEnv(getenv func(string) string) ([]string, error) {
	path := getenv(EnvUserEnvFile)
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the job's environment: %w", err)
	}
	sum := sha256.Sum256(b)
	if want := getenv(EnvUserEnvSHA256); !hmac.Equal([]byte(hex.EncodeToString(sum[:])), []byte(strings.ToLower(want))) {
		return nil, fmt.Errorf("the job's environment %s is not the one Sluice wrote for it (a Secret of that name was there before the job): refusing it", path)
	}
	var u UserEnvironment
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, fmt.Errorf("the job's environment %s: %w", path, err)
	}
	env := make([]string, 0, len(u.Variables))
	for k, v := range u.Variables {
		if k != "" && !strings.Contains(k, "=") && !controlVars[k] {
			env = append(env, k+"="+v)
		}
	}
	return env, nil
}

// withUserEnv is environ with the job's own variables: they replace the
// image's defaults (PATH, as the exported PATH replaces it under Slurm),
// never what Sluice set, which the server left out of the file.
func withUserEnv(environ, own []string) []string {
	if len(own) == 0 {
		return environ
	}
	set := make(map[string]bool, len(own))
	for _, kv := range own {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	out := make([]string, 0, len(environ)+len(own))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, own...)
}
