package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeUserEnv writes vars as the pod factory writes the job's environment
// Secret and returns the file and its SHA-256.
func writeUserEnv(t *testing.T, vars map[string]string) (string, string) {
	t.Helper()
	b, err := json.Marshal(UserEnvironment{Salt: "s", Variables: vars})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "environment.json")
	if err := os.WriteFile(path, b, 0o444); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return path, hex.EncodeToString(sum[:])
}

// The batch script runs with the job's own variables from the mounted file:
// they replace the image's (PATH), exported bash functions survive, and the
// launcher's own variables are not the file's to set.
func TestBatchScriptGetsTheJobsEnvironment(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	file, sum := writeUserEnv(t, map[string]string{
		"SECRET_TOKEN":       "s3cr3t-value",
		"PATH":               "/custom/bin:/usr/bin:/bin",
		"BASH_FUNC_module%%": "() {  echo \"module $*\"\n}",
		EnvScript:            "#!/bin/sh\necho planted\n",
	})
	env := map[string]string{
		"SLURM_JOB_ID": "1", "SLURM_NODEID": "0", EnvHosts: "n0", EnvRunDir: t.TempDir(),
		EnvScript: "#!/bin/bash\necho \"$SECRET_TOKEN\"\necho \"$PATH\"\nmodule load cuda\n",
		EnvStdout: out, EnvTerminationLog: filepath.Join(dir, "termination-log"),
		EnvUserEnvFile: file, EnvUserEnvSHA256: sum,
	}
	if rc := Main(nil, func(k string) string { return env[k] }, io.Discard, io.Discard); rc != 0 {
		b, _ := os.ReadFile(out)
		t.Fatalf("status %d: %s", rc, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "s3cr3t-value\n/custom/bin:/usr/bin:/bin\nmodule load cuda\n"; got != want {
		t.Errorf("the script printed %q, want %q", got, want)
	}
}

// A file that is not the one the server wrote (its SHA-256 differs from the
// pod spec's), or that is not there, fails the launcher before the script runs.
func TestLauncherRefusesAnotherEnvironment(t *testing.T) {
	file, _ := writeUserEnv(t, map[string]string{"A": "1"})
	other := strings.Repeat("0", 64)
	for name, tc := range map[string]struct{ file, sum, want string }{
		"planted": {file, other, "not the one Sluice wrote"},
		"missing": {filepath.Join(t.TempDir(), "none"), other, "read the job's environment"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran")
			env := map[string]string{
				"SLURM_JOB_ID": "1", "SLURM_NODEID": "0", EnvHosts: "n0", EnvRunDir: t.TempDir(),
				EnvScript: "#!/bin/sh\ntouch " + ran + "\n", EnvTerminationLog: filepath.Join(dir, "termination-log"),
				EnvUserEnvFile: tc.file, EnvUserEnvSHA256: tc.sum,
			}
			var stderr strings.Builder
			if rc := Main(nil, func(k string) string { return env[k] }, io.Discard, &stderr); rc == 0 {
				t.Fatal("the launcher ran the job")
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want it to say %q", stderr.String(), tc.want)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the script ran")
			}
		})
	}
}
