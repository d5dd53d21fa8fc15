package tenancy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ackSubmissions is how many random submissions TestAcknowledgedJobsAreNeverLost
// sends; SLUICE_ACK_SUBMISSIONS sets another count (and SLUICE_ACK_SEED
// replays a run: the seed is logged).
const ackSubmissions = 150

// TestAcknowledgedJobsAreNeverLost: random and edge-case submissions from
// alice and bob (sizes, names, environments, arrays, paths, time limits,
// bad values) through the real server are each either refused with a 4xx
// and an errors[] entry, or acknowledged; never a 5xx. Every acknowledged
// id is in squeue (jobs) and job/{id} at once, and, once cancelled (which
// stores a job still waiting in its submit batch), in sacct (slurmdb jobs).
func TestAcknowledgedJobsAreNeverLost(t *testing.T) {
	s := siteFor(t)
	count := ackSubmissions
	if v := os.Getenv("SLUICE_ACK_SUBMISSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_ACK_SUBMISSIONS=%q: want a positive count", v)
		}
		count = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SLUICE_ACK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_ACK_SEED=%q: want a number", v)
		}
		seed = n
	}
	t.Logf("%d submissions, SLUICE_ACK_SEED=%d", count, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	bodies := make([]map[string]any, count)
	users := make([]string, count)
	for i := range bodies {
		bodies[i], users[i] = randomSubmission(rng), []string{alice, bob}[rng.IntN(2)]
	}

	var (
		mu    sync.Mutex
		acked = map[string]int{} // job id -> submission
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				r := s.do(t, users[i], http.MethodPost, api+"/job/submit", bodies[i], nil)
				switch {
				case r.status == http.StatusOK:
					id := fmt.Sprint(r.doc["job_id"])
					if n, ok := r.doc["job_id"].(float64); ok && n > 0 {
						id = strconv.FormatUint(uint64(n), 10)
					}
					mu.Lock()
					if prev, dup := acked[id]; dup {
						t.Errorf("job id %s acknowledged twice (submissions %d and %d)", id, prev, i)
					}
					acked[id] = i
					mu.Unlock()
				case r.status >= 400 && r.status < 500:
					errs := r.errors()
					if len(errs) == 0 {
						t.Errorf("submission %d refused without errors[]: %s", i, r)
					} else if testing.Verbose() {
						t.Logf("submission %d refused: %s: %s", i, errs[0].Source, errs[0].Description)
					}
				default:
					t.Errorf("submission %d: %s, want 200 or a 4xx (body %v)", i, r, bodies[i]["job"])
				}
			}
		})
	}
	for i := range bodies {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Cleanup(func() {
		for id := range acked {
			s.del(t, operatorUser, api+"/job/"+id)
		}
	})
	t.Logf("%d of %d submissions acknowledged", len(acked), count)
	if len(acked) == 0 {
		t.Fatal("no submission was acknowledged: the generator tests nothing")
	}

	// squeue and job/{id} list a job from its submit batch while it waits there, so every
	// acknowledged id is in them at once.
	listed := map[string]bool{}
	for _, j := range s.jobsAs(t, operatorUser) {
		listed[idOf(j)] = true
	}
	for id, i := range acked {
		if !listed[id] {
			t.Errorf("acknowledged job %s (submission %d: %v) is not in squeue", id, i, bodies[i]["job"])
			continue
		}
		if r := s.get(t, operatorUser, api+"/job/"+id); r.status != http.StatusOK {
			t.Errorf("acknowledged job %s: job/{id} answers %s", id, r)
		}
	}
	// The ledger records a job from its PodGroup: cancelling each job stores those still
	// waiting in their batch (then every batch is removed) and ends them all in sacct.
	for id := range acked {
		s.del(t, operatorUser, api+"/job/"+id)
	}
	s.waitBatchesDrained(t)
	s.waitInSacct(t, acked)
}

// waitBatchesDrained waits until the submit queue has no batch left.
func (s *site) waitBatchesDrained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := s.kube.CoreV1().ConfigMaps("sluice-system").List(context.Background(), metav1.ListOptions{LabelSelector: "sluice.dev/submit-batch"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d submit batches still waiting: %s", len(list.Items), batchNames(list.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func batchNames(cms []corev1.ConfigMap) string {
	names := make([]string, len(cms))
	for i := range cms {
		names[i] = cms[i].Name
	}
	return strings.Join(names, ", ")
}

// waitInSacct waits until every acknowledged id is in the ledger's job
// list (the recorder follows the PodGroups).
func (s *site) waitInSacct(t *testing.T, acked map[string]int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := s.get(t, operatorUser, "/slurmdb/v0.0.45/jobs")
		r.requireOK(t)
		seen := map[string]bool{}
		jobs, _ := r.doc["jobs"].([]any)
		for _, j := range jobs {
			seen[idOf(j.(map[string]any))] = true
		}
		var missing []string
		for id := range acked {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged jobs are not in sacct: %s", len(missing), strings.Join(missing, ", "))
		}
		time.Sleep(time.Second)
	}
}

// idOf reads a job record's job_id (a number, or a no-value struct).
func idOf(j map[string]any) string {
	switch v := j["job_id"].(type) {
	case float64:
		return strconv.FormatUint(uint64(v), 10)
	case map[string]any:
		if n, ok := v["number"].(float64); ok {
			return strconv.FormatUint(uint64(n), 10)
		}
	}
	return fmt.Sprint(j["job_id"])
}

// randomSubmission draws one submission: each field absent, usual,
// at a bound, or past it.
func randomSubmission(rng *rand.Rand) map[string]any {
	pick := func(options ...any) any { return options[rng.IntN(len(options))] }
	text := func(max int) string {
		alphabet := []rune("abcXYZ019 _-./%é字\n\t\x1b\"\\<>&")
		n := rng.IntN(max + 1)
		out := make([]rune, n)
		for i := range out {
			out[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(out)
	}
	job := map[string]any{"hold": true}
	// Half the submissions set few fields and a usual script, so many are
	// taken; the other half set many, mostly past a bound.
	tame := rng.IntN(2) == 0
	rate := 3
	if tame {
		rate = 14
	}
	set := func(field string, options ...any) {
		if rng.IntN(rate) > 0 {
			return
		}
		if v := pick(options...); v != nil {
			job[field] = v
		}
	}
	set("name", "train", text(40), text(300), strings.Repeat("n", 256), strings.Repeat("n", 257))
	set("nodes", "1", "2", "4", "5", "1-3", "0", "-1", "1048576", "99999999999", "x")
	set("minimum_nodes", 1, 4, 5, 0, 1<<20, 1<<21)
	set("tasks", 1, 8, 0, 1<<20, 1<<21)
	set("tasks_per_node", 1, 8, 129, 1<<20)
	set("cpus_per_task", 1, 16, 128, 129, 0, 1<<20)
	set("memory_per_node", 1024, 1<<20, 1<<21, int64(1)<<50, -1)
	set("memory_per_cpu", 512, 1<<16, -5)
	set("tres_per_node", "gres/gpu:1", "gres/gpu:h100:8", "gres/gpu:16", "gres/gpu:a100:2", "gres/shard:3", "gres/mps:50",
		"gres/gpu:4611686018427387904", "gres/gpu:"+strings.Repeat("t", 70)+":1", "gres/nic:1")
	set("time_limit", 1, 60, 2880, 35791394, 35791395, 153722868, -1, 0, int64(1<<32-1), int64(1<<32-2),
		map[string]any{"set": true, "infinite": true}, map[string]any{"set": true, "number": 153722868})
	set("environment", map[string]string{"A": "1"}, map[string]string{"": "x"}, map[string]string{"BASH_FUNC_ml%%": "() { :; }"},
		map[string]string{"BAD\nNAME": "x"}, map[string]string{"NUL": "a\x00b"}, map[string]string{"BIG": strings.Repeat("v", 130<<10)},
		[]string{"PATH=/bin", "HOME=/tmp"}, []string{"=x"})
	set("array", "0-3", "0-3%2", "1,5,9", "0-1000", "0-1001", "1-", "0-10:3", strings.Repeat("1,", 150)+"1")
	set("comment", text(50), text(1100), strings.Repeat("c", 1024))
	set("standard_output", "/tmp/out-%j.txt", "/"+text(60), "/"+strings.Repeat("p", 4096), "rel/out")
	set("standard_error", "/tmp/err-%j.txt", "/"+strings.Repeat("e", 5000))
	set("current_working_directory", "/tmp", "/"+strings.Repeat("d", 4095), "/"+strings.Repeat("d", 4096))
	set("container_image", "ubuntu:24.04", "bad image", strings.Repeat("i", 512), strings.Repeat("i", 513))
	set("dependency", "afterok:1", "afterok:x", "singleton", "afterany:999999999")
	set("qos", "normal", "preemptible", "high", "nope", strings.Repeat("q", 80))
	set("partition", "h100", "a100", "none", strings.Repeat("P", 80))
	set("account", "nlp", "vision", "default", "research", "bogus")
	set("priority", 5, -1)
	set("begin_time", time.Now().Add(time.Hour).Unix(), -1)
	if tame {
		return map[string]any{"script": pick("#!/bin/bash\nsleep 600\n", "#!/bin/bash\n#SBATCH -N 2 --gres=gpu:h100:8 -t 30\nsrun hostname\n", "#!/bin/sh\n"+text(2000)).(string), "job": job}
	}
	script := pick(
		"#!/bin/bash\nsleep 600\n",
		"#!/bin/bash\n#SBATCH -N 2 --gres=gpu:h100:8 -t 30\nsrun hostname\n",
		"#!/bin/bash\n#SBATCH -t 999999999:00:00\ntrue\n",
		"#!/bin/bash\n#SBATCH --array=0-5000\ntrue\n",
		"#!/bin/sh\n"+text(2000),
		"#!/bin/sh\n"+strings.Repeat("x", 131000),
		"#!/bin/sh\necho \x00",
		"no shebang",
	).(string)
	return map[string]any{"script": script, "job": job}
}
