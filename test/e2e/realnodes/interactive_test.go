package realnodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/sluicehq/sluice/test/e2e"
)

// TestSallocThenSrunAcrossTwoNodes: salloc makes an allocation on two real nodes and
// runs a command with it; that command's srun runs a step on both nodes through the
// server's attach, each task's output coming back labelled.
func TestSallocThenSrunAcrossTwoNodes(t *testing.T) {
	s := startSite(t)
	out := s.sluice(t, "salloc", "-p", "real", "-N", "2", "-J", "interactive", s.bin, "srun", "-l", "hostname")
	lines := regexp.MustCompile(`(?m)^(\d+): (\S+)$`).FindAllStringSubmatch(out, -1)
	var tasks, hosts []string
	for _, l := range lines {
		tasks, hosts = append(tasks, l[1]), append(hosts, l[2])
	}
	slices.Sort(tasks)
	slices.Sort(hosts)
	if !slices.Equal(tasks, []string{"0", "1"}) || len(slices.Compact(hosts)) != 2 {
		t.Fatalf("salloc -N 2 srun -l hostname printed %q, want a line from each of two hosts", out)
	}
}

// TestSrunPtyShellAsTheUser: srun --pty bash from a login shell gets a terminal on a real
// node, running as the user's uid; what the user types runs there and the shell's exit
// status is srun's.
func TestSrunPtyShellAsTheUser(t *testing.T) {
	s := startSite(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, "srun", "-p", "real", "--pty", "bash")
	cmd.Env = append(os.Environ(), "SLUICE_URL="+s.url, "SLURM_JWT="+s.token, "TERM=xterm")
	cmd.Dir = s.shared
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screen lockedBuffer
	go func() { _, _ = io.Copy(&screen, ptmx) }()
	// Type once the shell is there: its first prompt or output.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(screen.String(), "$") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := ptmx.Write([]byte("echo uid=$(id -u) tty=$(tty); exit 7\n")); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("srun --pty bash ended with %v, want the shell's exit 7; screen:\n%s", err, screen.String())
	}
	got := screen.String()
	if !strings.Contains(got, "uid=1001") || !regexp.MustCompile(`tty=/dev/pts/\d+`).MatchString(got) {
		t.Errorf("the shell should run as alice (1001) on a terminal; screen:\n%s", got)
	}
}

// lockedBuffer is a bytes.Buffer read while a goroutine writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSallocEndedOrGoneReleasesItsJob: a salloc ended by SIGTERM or SIGHUP (its
// terminal closed) hangs up its command and relinquishes the allocation at once; one
// killed with SIGKILL, as when its machine goes, stops holding the allocation, and the
// batch host's launcher releases it after the inactive limit. None leaves its job
// RUNNING until the time limit.
func TestSallocEndedOrGoneReleasesItsJob(t *testing.T) {
	s := startSite(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, s.bin, "salloc", "-p", "real", "-J", "held", "sleep", "600")
			cmd.Env = append(os.Environ(), "SLUICE_URL="+s.url, "SLURM_JWT="+s.token)
			cmd.Dir = s.shared
			// Its own process group, as a terminal's session: SIGKILL goes to salloc and
			// its command alike, as when the machine goes, and nothing outlives the test.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.WaitDelay = 5 * time.Second
			var out lockedBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
			granted := regexp.MustCompile(`Granted job allocation (\d+)`)
			var id string
			e2e.WaitFor(t, "salloc's allocation", 3*time.Minute, func(context.Context) (bool, error) {
				if m := granted.FindStringSubmatch(out.String()); m != nil {
					id = m[1]
					return true, nil
				}
				return false, fmt.Errorf("salloc printed %q", out.String())
			})
			e2e.WaitFor(t, "salloc's nodes", 3*time.Minute, func(context.Context) (bool, error) {
				return strings.Contains(out.String(), "are ready for job"), fmt.Errorf("salloc printed %q", out.String())
			})
			target := cmd.Process.Pid
			if sig == syscall.SIGKILL {
				target = -target
			}
			if err := syscall.Kill(target, sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if sig != syscall.SIGKILL {
				if err == nil || !strings.Contains(out.String(), "Relinquishing job allocation "+id) {
					t.Errorf("salloc after %s: %v, printed %q; want the command hung up and the allocation relinquished", sig, err, out.String())
				}
			}
			if st := s.waitEnd(t, id, 3*time.Minute); st == "RUNNING" {
				t.Errorf("job %s stayed RUNNING after salloc got %s", id, sig)
			}
		})
	}
}
