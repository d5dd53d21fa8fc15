package realnodes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/e2e"
)

// owner is the uid that owns a file of the shared directory.
func (s *site) owner(t *testing.T, name string) uint32 {
	t.Helper()
	info, err := os.Stat(filepath.Join(s.shared, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return info.Sys().(*syscall.Stat_t).Uid
}

// mkShared makes directories of the shared filesystem every user may write to (as a
// site's /scratch).
func (s *site) mkShared(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		p := filepath.Join(s.shared, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTwoUsersShareAFilesystem: alice's and bob's jobs write into one directory tree of
// the site filesystem; each file (the --output file with %x-%j too) is its writer's, and
// neither can read the other's private file. The output file outlives the job's pods,
// and `sluice logs` reads it from this machine, as from a login node that mounts it.
func TestTwoUsersShareAFilesystem(t *testing.T) {
	s := startSite(t)
	s.mkShared(t, "logs", "tree")
	script := func(user, other string) string {
		return `#!/bin/bash
#SBATCH -J share-` + user + ` -o logs/%x-%j.out
umask 077
echo "` + user + ` secret" > tree/` + user + `.txt
echo "uid=$(id -u) home=$HOME user=$USER"
for i in $(seq 1 50); do [ -e tree/` + other + `.txt ] && break; sleep 0.2; done
cat tree/` + other + `.txt 2>&1 || echo "` + user + ` may not read ` + other + `'s file"
`
	}
	alice := s.sbatch(t, script("alice", "bob"))
	bob := s.sbatchAs(t, s.bobToken, script("bob", "alice"))
	if st := s.waitEnd(t, alice, 3*time.Minute); st != "COMPLETED" {
		t.Fatalf("alice's job %s ended %s:\n%s", alice, st, s.tryRead("logs/share-alice-"+alice+".out"))
	}
	if st := s.waitEndAs(t, s.bobToken, bob, 3*time.Minute); st != "COMPLETED" {
		t.Fatalf("bob's job %s ended %s:\n%s", bob, st, s.tryRead("logs/share-bob-"+bob+".out"))
	}
	for _, tc := range []struct {
		file string
		uid  uint32
	}{{"tree/alice.txt", 1001}, {"tree/bob.txt", 1002}, {"logs/share-alice-" + alice + ".out", 1001}, {"logs/share-bob-" + bob + ".out", 1002}} {
		if got := s.owner(t, tc.file); got != tc.uid {
			t.Errorf("%s is owned by uid %d, want its writer's %d", tc.file, got, tc.uid)
		}
	}
	aliceOut, bobOut := s.readShared(t, "logs/share-alice-"+alice+".out"), s.readShared(t, "logs/share-bob-"+bob+".out")
	for user, out := range map[string]string{"alice": aliceOut, "bob": bobOut} {
		if strings.Contains(out, "secret") || !strings.Contains(out, "Permission denied") {
			t.Errorf("%s's job read the other's private file, or was not told why not:\n%s", user, out)
		}
	}
	if !strings.Contains(aliceOut, "uid=1001") || !strings.Contains(bobOut, "uid=1002") {
		t.Errorf("the jobs did not run as their users' uids:\nalice: %s\nbob: %s", aliceOut, bobOut)
	}

	// The job's pods go; its output file stays where the job wrote it.
	ctx := context.Background()
	if err := e2e.Rig(t).Client().CoreV1().Pods(kube.Namespace("nlp")).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "sluice.dev/job-id=" + alice}); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "job "+alice+"'s pods gone", time.Minute, func(context.Context) (bool, error) {
		return len(pods(t, alice)) == 0, nil
	})
	out := s.sluice(t, "logs", alice)
	if !strings.Contains(out, "logs/share-alice-"+alice+".out") || !strings.Contains(out, "uid=1001") {
		t.Errorf("sluice logs %s after its pods went: %q, want the output file's content and its path", alice, out)
	}
}

// TestMissingOutputDirectoryFailsTheJob: as on Slurm, an --output in a directory that is
// not there fails the job before its script runs, and the pod log says why.
func TestMissingOutputDirectoryFailsTheJob(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, "#!/bin/bash\n#SBATCH -o no-such-dir/%j.out\ntouch ran-"+"$SLURM_JOB_ID\n")
	if st := s.waitEnd(t, id, 3*time.Minute); st != "FAILED" {
		t.Errorf("job %s ended %s, want FAILED", id, st)
	}
	if _, err := os.Stat(filepath.Join(s.shared, "ran-"+id)); err == nil {
		t.Errorf("job %s's script ran without its output file", id)
	}
	out := s.sluice(t, "logs", id)
	if !strings.Contains(out, "slurmstepd: error: Could not open stdout file "+filepath.Join(s.shared, "no-such-dir", id+".out")+": No such file or directory") {
		t.Errorf("sluice logs %s: %q, want slurmstepd's error naming the file", id, out)
	}
}
