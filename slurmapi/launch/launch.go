// Package launch is the task launcher every pod of a Slurm job runs, and
// srun. The pod factory (slurmapi/kube) puts the sluice binary into the
// pod through an init container and starts `sluice launch` as the pod's
// command. On the batch host (node 0) the launcher runs the batch script
// once; on every node of a multi-node job it also serves step launches
// from srun over HTTP, authenticated with the job's key. Everything the
// launcher needs comes from the pod's environment, so a test starts the
// same processes on one machine by giving them the same environment.
package launch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The pod's environment the launcher and srun read (beyond SLURM_*).
const (
	// EnvDir is the directory holding the sluice binary and its srun
	// link; the launcher puts it first on the tasks' PATH.
	EnvDir = "SLUICE_LAUNCH_DIR"
	// EnvRunDir is a private scratch directory of the pod: the script,
	// the step counter and the step log.
	EnvRunDir = "SLUICE_RUN_DIR"
	// EnvHosts lists the job's node names (pod hostnames) by node index.
	EnvHosts = "SLUICE_LAUNCH_HOSTS"
	// EnvPeers lists each node's launcher address (host:port) by node
	// index; set only for multi-node jobs.
	EnvPeers = "SLUICE_LAUNCH_PEERS"
	// EnvAddr is where this node's launcher listens (":6818").
	EnvAddr = "SLUICE_LAUNCH_ADDR"
	// EnvKeyFile is the job's launch key (a mounted Secret).
	EnvKeyFile = "SLUICE_LAUNCH_KEY_FILE"
	// EnvTerminationLog is where the batch host leaves its step report
	// (default /dev/termination-log).
	EnvTerminationLog = "SLUICE_TERMINATION_LOG"
	// EnvScript, EnvStdout and EnvStderr are the batch script and its
	// output files (batch host only).
	EnvScript = "SLUICE_SCRIPT"
	EnvStdout = "SLUICE_STDOUT"
	EnvStderr = "SLUICE_STDERR"
	// EnvStdin is the script's --input; without it, /dev/null.
	EnvStdin = "SLUICE_STDIN"
	// EnvWorkDir is the job's working directory (--chdir, else the submit
	// directory). The launcher changes to it itself, as slurmstepd does: a
	// directory that is not there (or not the user's to enter) sends the job
	// to /tmp with Slurm's message, where the container runtime would have
	// made it, as root, on the user's filesystem.
	EnvWorkDir = "SLUICE_WORKDIR"
	// EnvAllocation, "1", marks a job without a script (job/allocate):
	// its batch host serves attaches until the allocation is released.
	EnvAllocation = "SLUICE_ALLOCATION"
	// EnvKeySHA256 is the SHA-256 (hex) of the launch key the Sluice
	// server made for the job. The pod's spec carries it, so a key
	// Secret planted under the job's name before the job existed is
	// refused rather than used.
	EnvKeySHA256 = "SLUICE_LAUNCH_KEY_SHA256"
	// EnvTimeLimit is the job's time limit in seconds (the pods'
	// activeDeadlineSeconds) and EnvJobStart when its pods were made (Unix
	// seconds; the kubelet counts the limit from a later moment, its own
	// start of the pod). The warning signal (EnvSignal, --signal as
	// sbatch.Signal writes it) is sent that many seconds before
	// EnvJobStart + EnvTimeLimit: never later than Slurm would send it.
	EnvTimeLimit = "SLUICE_TIME_LIMIT"
	EnvJobStart  = "SLUICE_JOB_START"
	EnvSignal    = "SLUICE_SIGNAL"
)

// Port is the launcher's port, slurmd's.
const Port = 6818

// Job is what a launcher or srun knows of the allocation it runs in.
type Job struct {
	ID       string
	Node     int      // this pod's node index (SLURM_NODEID)
	Hosts    []string // node names by index
	Peers    []string // launcher addresses by index; nil for one node
	Dir      string
	RunDir   string
	KeyFile  string
	Addr     string
	TermLog  string
	CPUs     int // SLURM_CPUS_PER_TASK of the job
	JobTasks int // SLURM_NTASKS of the job
	// Allocation: the job has no script (EnvAllocation).
	Allocation bool
	KeySHA256  string
	// OwnEnv are the job's own variables (NAME=value) from its mounted
	// environment file (readUserEnv); the launcher reads them, srun does not.
	OwnEnv []string
}

// JobFromEnv reads the allocation from the environment getenv gives.
func JobFromEnv(getenv func(string) string) (*Job, error) {
	j := &Job{ID: getenv("SLURM_JOB_ID"), Dir: getenv(EnvDir), RunDir: getenv(EnvRunDir),
		KeyFile: getenv(EnvKeyFile), Addr: getenv(EnvAddr), TermLog: getenv(EnvTerminationLog),
		Allocation: getenv(EnvAllocation) == "1", KeySHA256: getenv(EnvKeySHA256)}
	if j.ID == "" || j.RunDir == "" {
		return nil, fmt.Errorf("not inside a Slurm job of Sluice (SLURM_JOB_ID and %s unset)", EnvRunDir)
	}
	var err error
	if j.Node, err = strconv.Atoi(getenv("SLURM_NODEID")); err != nil {
		return nil, fmt.Errorf("SLURM_NODEID %q: %v", getenv("SLURM_NODEID"), err)
	}
	j.Hosts = split(getenv(EnvHosts))
	if len(j.Hosts) == 0 {
		return nil, fmt.Errorf("%s is empty", EnvHosts)
	}
	j.Peers = split(getenv(EnvPeers))
	if len(j.Peers) > 0 && len(j.Peers) != len(j.Hosts) {
		return nil, fmt.Errorf("%s names %d launchers for %d nodes", EnvPeers, len(j.Peers), len(j.Hosts))
	}
	if j.Allocation && len(j.Peers) == 0 {
		return nil, fmt.Errorf("an allocation's launchers serve attaches, but %s is empty", EnvPeers)
	}
	if j.Node < 0 || j.Node >= len(j.Hosts) {
		return nil, fmt.Errorf("SLURM_NODEID %d is not a node of the job (%d nodes)", j.Node, len(j.Hosts))
	}
	if j.TermLog == "" {
		j.TermLog = "/dev/termination-log"
	}
	if j.Addr == "" {
		j.Addr = ":" + strconv.Itoa(Port)
	}
	j.CPUs, _ = strconv.Atoi(getenv("SLURM_CPUS_PER_TASK"))
	j.JobTasks, _ = strconv.Atoi(getenv("SLURM_NTASKS"))
	return j, nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// key reads the job's launch key.
func (j *Job) key() ([]byte, error) {
	if j.KeyFile == "" {
		return nil, fmt.Errorf("this job has no launch key (%s unset): a one-node job launches only locally", EnvKeyFile)
	}
	k, err := os.ReadFile(j.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("read the job's launch key: %w", err)
	}
	k = []byte(strings.TrimSpace(string(k)))
	if len(k) < 16 {
		return nil, fmt.Errorf("launch key %s is shorter than 16 bytes", j.KeyFile)
	}
	if j.KeySHA256 != "" {
		sum := sha256.Sum256(k)
		if !hmac.Equal([]byte(hex.EncodeToString(sum[:])), []byte(strings.ToLower(j.KeySHA256))) {
			return nil, fmt.Errorf("launch key %s is not the key Sluice made for job %s (a Secret of that name was there before the job): refusing it", j.KeyFile, j.ID)
		}
	}
	return k, nil
}

// pathWithDir puts the launcher directory first on PATH, so scripts and
// tasks find srun.
func (j *Job) pathWithDir(path string) string {
	if j.Dir == "" {
		return path
	}
	for _, p := range filepath.SplitList(path) {
		if p == j.Dir {
			return path
		}
	}
	if path == "" {
		return j.Dir + ":/usr/local/bin:/usr/bin:/bin"
	}
	return j.Dir + ":" + path
}
