package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

func TestOutputFiles(t *testing.T) {
	task, arrayID := int32(3), int64(40)
	cases := []struct {
		name           string
		workDir        string
		stdout, stderr string
		array          bool
		want           [2]string
	}{
		{"sbatch default in the submit dir", "/home/alice/run", "", "", false, [2]string{"/home/alice/run/slurm-12.out", ""}},
		{"array default", "/home/alice", "", "", true, [2]string{"/home/alice/slurm-40_3.out", ""}},
		{"patterns, relative and absolute", "/home/alice", "logs/%x-%j.out", "/scratch/%u/%A_%a.err", true, [2]string{"/home/alice/logs/train-12.out", "/scratch/alice/40_3.err"}},
		{"--error same as --output shares the stream", "/w", "o-%j", "o-%j", false, [2]string{"/w/o-12", ""}},
		{"node pattern", "/w", "%N.out", "", false, [2]string{"/w/gpu-7.out", ""}},
		{"no working directory, no --output: pod log only", "", "", "", false, [2]string{"", ""}},
	}
	for _, c := range cases {
		pg := PodGroupFor(&slurmapi.JobDesc{Name: "train", User: "alice", Account: "nlp", Nodes: 1, Tasks: 1, CPUsPerTask: 1,
			WorkDir: c.workDir, Stdout: c.stdout, Stderr: c.stderr}, 12)
		if c.array {
			pg.Spec.Slurm.ArrayJobID, pg.Spec.Slurm.ArrayTaskID = &arrayID, &task
		}
		out, errPath := outputFiles(pg, "gpu-7")
		if [2]string{out, errPath} != c.want {
			t.Errorf("%s: %q %q, want %q", c.name, out, errPath, c.want)
		}
	}
}

// TestRunScriptWritesOutputFiles runs the batch pod's command in a real
// shell: the script's stdout and stderr land in the --output/--error files
// and still on the container's own streams (the pod log), and the script's
// exit status is the container's.
func TestRunScriptWritesOutputFiles(t *testing.T) {
	script := "#!/bin/sh\necho out $SLURM_JOB_ID\necho err >&2\nexit 3\n"
	cases := []struct {
		name          string
		stderrPattern string
		wantFiles     map[string]string // file name -> content
		wantStdout    string
		wantStderr    string
	}{
		{"stderr with stdout, like sbatch without --error", "", map[string]string{"slurm-12.out": "out 12\nerr\n"}, "out 12\nerr\n", ""},
		{"separate --error", "%x.err", map[string]string{"slurm-12.out": "out 12\n", "echo.err": "err\n"}, "out 12\n", "err\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pg := PodGroupFor(&slurmapi.JobDesc{Account: "a", Name: "echo", Nodes: 1, Tasks: 1, CPUsPerTask: 1,
				WorkDir: dir, Stderr: c.stderrPattern, Script: script}, 12)
			pods, err := BuildPods(pg, []bridge.Bind{{Node: "n"}}, RunAs{LauncherImage: testLauncherImage, Image: "img"})
			if err != nil {
				t.Fatal(err)
			}
			node := launchtest.Start(t, pods, "")[0]
			if rc := node.Wait(); rc != 3 {
				t.Fatalf("exit %d, want status 3 (stderr %q)", rc, node.Stderr().All())
			}
			stdout, stderr := lines(node.Stdout()), lines(node.Stderr())
			if stdout != c.wantStdout || stderr != c.wantStderr {
				t.Errorf("pod log: stdout %q stderr %q, want %q %q", stdout, stderr, c.wantStdout, c.wantStderr)
			}
			for name, want := range c.wantFiles {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(got) != want {
					t.Errorf("%s: %q (%v), want %q", name, got, err, want)
				}
			}
		})
	}
}

// lines is a stream's text, each line ended.
func lines(l *launchtest.Lines) string {
	var b strings.Builder
	for _, line := range l.All() {
		b.WriteString(line + "\n")
	}
	return b.String()
}
