package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// slurmrestd is real Slurm beside Sluice in the submission benchmark: munged, slurmctld
// and slurmrestd from the machine's packages (Debian's slurmctld, slurmrestd,
// slurm-wlm-jwt-plugin and munge: `make bench-submit-deps`), each a child process of
// the harness with its state in a fresh directory, JWT authentication as sites run
// slurmrestd. slurmctld has two nodes and no slurmd, so its nodes stay down and a job
// that is not held waits for resources: no job starts on either side while it is
// submitted, and slurmctld schedules as it always does.
type slurmrestd struct {
	dir   string
	url   string // http://127.0.0.1:port
	token string
	procs []*childProcess // munged, slurmctld, slurmrestd: stopped in reverse
	cpu   []usageProbe    // slurmctld's and slurmrestd's
}

// slurmVersion is the newest REST version slurmrestd 22.05 (Debian 12) serves.
const slurmVersion = "v0.0.38"

// slurmBinaries are what the contender needs on PATH (or in /usr/sbin).
var slurmBinaries = []string{"munged", "slurmctld", "slurmrestd", "scontrol"}

// slurmMissing says which of slurmBinaries (or the JWT plugin) the machine lacks; ""
// when it has them all.
func slurmMissing() string {
	var missing []string
	for _, b := range slurmBinaries {
		if _, err := lookSbin(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		if m, _ := filepath.Glob("/usr/lib/*/slurm-wlm/auth_jwt.so"); len(m) == 0 {
			missing = append(missing, "auth_jwt.so (package slurm-wlm-jwt-plugin)")
		}
	}
	return strings.Join(missing, ", ")
}

// lookSbin finds a daemon on PATH or in /usr/sbin, which a user's PATH may lack.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return exec.LookPath(filepath.Join("/usr/sbin", name))
}

var slurmConf = template.Must(template.New("slurm.conf").Parse(`ClusterName=bench
SlurmctldHost=localhost
SlurmctldPort={{.CtldPort}}
SlurmdPort={{.SlurmdPort}}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={{.Dir}}/munge.socket
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={{.Dir}}/jwt.key
StateSaveLocation={{.Dir}}/state
SlurmdSpoolDir={{.Dir}}/spool
SlurmctldPidFile={{.Dir}}/slurmctld.pid
SlurmctldLogFile={{.Dir}}/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MaxJobCount=1000000
MinJobAge=300
NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=128 RealMemory=1000000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
`))

// startSlurmrestd starts munged, slurmctld and slurmrestd in dir and returns once
// slurmrestd answers with a token slurmctld accepts.
func startSlurmrestd(ctx context.Context, dir string) (_ *slurmrestd, err error) {
	s := &slurmrestd{dir: dir}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	for _, d := range []string{"state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	for name, size := range map[string]int{"munge.key": 1024, "jwt.key": 32} {
		key := make([]byte, size)
		_, _ = rand.Read(key)
		if err := os.WriteFile(filepath.Join(dir, name), key, 0o600); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	var conf strings.Builder
	if err := slurmConf.Execute(&conf, map[string]any{"Dir": dir, "CtldPort": ports[0], "SlurmdPort": ports[1]}); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o644); err != nil {
		return nil, err
	}
	env := []string{"SLURM_CONF=" + confPath}
	bin := func(name string) string { p, _ := lookSbin(name); return p }
	if _, err := s.run(env, "munged", bin("munged"), "--foreground", "--force", "--socket="+filepath.Join(dir, "munge.socket"),
		"--key-file="+filepath.Join(dir, "munge.key"), "--pid-file="+filepath.Join(dir, "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munged.seed"), "--log-file="+filepath.Join(dir, "munged.log")); err != nil {
		return nil, err
	}
	ctld, err := s.run(env, "slurmctld", bin("slurmctld"), "-D", "-i")
	if err != nil {
		return nil, err
	}
	if s.token, err = slurmToken(ctx, env); err != nil {
		return nil, err
	}
	// slurmrestd refuses to run as root; SLURM_JWT=daemon makes it take each request's token.
	s.url = "http://127.0.0.1:" + strconv.Itoa(ports[2])
	restd, err := s.run(append(env, "SLURM_JWT=daemon"), "slurmrestd", bin("slurmrestd"), "-a", "rest_auth/jwt", "-s", "openapi/"+slurmVersion,
		"-u", "nobody", "-g", "nogroup", "127.0.0.1:"+strconv.Itoa(ports[2]))
	if err != nil {
		return nil, err
	}
	s.cpu = []usageProbe{ctld, restd}
	if err := s.waitServing(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// run starts one daemon as a child process, its output in dir/NAME.out.
func (s *slurmrestd) run(env []string, name, bin string, args ...string) (usageProbe, error) {
	p := &childProcess{env: env}
	probe, err := p.start(filepath.Join(s.dir, name+".out"), bin, args...)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return probe, nil
}

// slurmToken asks slurmctld for a token for root, retrying while it starts.
func slurmToken(ctx context.Context, env []string) (string, error) {
	scontrol, _ := lookSbin("scontrol")
	var last []byte
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		cmd := exec.CommandContext(ctx, scontrol, "token", "username=root", "lifespan=86400")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if tok, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "SLURM_JWT="); err == nil && ok {
			return tok, nil
		}
		last = out
	}
	return "", fmt.Errorf("slurmctld gave no token within a minute: %s", strings.TrimSpace(string(last)))
}

// waitServing polls slurmrestd's ping until it answers.
func (s *slurmrestd) waitServing(ctx context.Context) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/slurm/"+slurmVersion+"/ping", nil)
		for k, v := range s.headers() {
			req.Header.Set(k, v)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("slurmrestd did not answer its ping within a minute (see " + filepath.Join(s.dir, "slurmrestd.out") + ")")
}

func (s *slurmrestd) headers() map[string]string {
	return map[string]string{"X-SLURM-USER-NAME": "root", "X-SLURM-USER-TOKEN": s.token}
}

// target is the benchmark's submission in slurmrestd v0.0.38's dialect (environment as
// an object, the working directory required).
func (s *slurmrestd) target(held bool) submitTarget {
	return submitTarget{url: s.url + "/slurm/" + slurmVersion + "/job/submit", headers: s.headers(), body: func(i int) []byte {
		return mustJSON(map[string]any{"script": benchScript, "job": map[string]any{
			"name": "bench-" + strconv.Itoa(i), "current_working_directory": "/tmp", "hold": held,
			"environment": map[string]string{"PATH": "/bin:/usr/bin"}}})
	}}
}

// cpuSeconds is slurmctld's and slurmrestd's CPU since their start.
func (s *slurmrestd) cpuSeconds() float64 {
	var total float64
	for _, p := range s.cpu {
		c, _ := p()
		total += c
	}
	return total
}

// stop ends the daemons, last started first, each by its process id.
func (s *slurmrestd) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
	s.procs = nil
}

// freePorts returns n loopback ports free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// benchScript is every benchmark job's script, the same on both sides.
const benchScript = "#!/bin/bash\nsrun hostname\n"
