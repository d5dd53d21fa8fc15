package tenancy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// The site's people, as examples/site.yaml and the server's config name them.
const (
	alice        = "alice"    // account nlp
	bob          = "bob"      // account vision
	operatorUser = "operator" // rest.operators: sees and changes every job
	adminUser    = "admin"    // rest.admins: also accounts, associations, QOS; may act as another user
	// floodUser has a submission rate limit of 2 at once, then one per
	// 1000 s: the third submission in a test is over it. Everyone else has
	// the default limit (100/s, bursts of 500).
	floodUser = "flood"
)

// api is the REST version the suite speaks.
const api = "/slurm/v0.0.45"

// site is the shared `sluice server` and what tests need to attack it.
type site struct {
	url        string // http://host:port of the REST API
	kube       kubernetes.Interface
	crs        client.WithWatch // Sluice's kinds, admin rights
	restConfig *rest.Config     // admin rights; copy and set Impersonate for a tenant
	key        []byte           // the server's JWT key
	proc       *sluiceproc.Process
}

var shared struct {
	once sync.Once
	site *site
}

// siteFor returns the shared server, starting it on the first call. It
// skips with -short; a server that failed to start fails every test.
func siteFor(t *testing.T) *site {
	t.Helper()
	e2e.Rig(t) // skips with -short
	shared.once.Do(func() { shared.site = startSite(t) })
	if shared.site == nil {
		t.Fatal("the shared sluice server did not start (see the first test's failure)")
	}
	s := shared.site
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sluice server log, last lines:\n%s", s.proc.Tail(60))
		}
	})
	return s
}

// startSite installs the CRDs and the example site and starts the server
// as `sluice dev` runs it (webhook, remediation, ledger on; one replica).
// Its state lives outside any test's temporary directory, since it
// outlives the test that started it; both go before the rig stops.
func startSite(t *testing.T) *site {
	t.Helper()
	rig := e2e.Rig(t)
	crs := sluiceproc.InstallSite(t, rig.RESTConfig())
	dir, err := os.MkdirTemp("", "sluice-tenancy-")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "jwt.key")
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serverConfig(rig.Kubeconfig, dir, keyFile)
	// As sluice dev: only the API server's client certificate reaches the webhook.
	cfg["webhook"].(map[string]any)["clientCAFile"] = rig.WebhookClientCA
	proc := sluiceproc.Launch(t, "sluice server", cfg)
	e2e.BeforeRigStop(func() {
		proc.Stop()
		os.RemoveAll(dir)
	})
	return &site{url: "http://" + proc.Addr(), kube: rig.Client(), crs: crs, restConfig: rig.RESTConfig(), key: key, proc: proc}
}

// serverConfig is `sluice dev`'s configuration plus the site's roles and
// the uid mapping of its users. The site's other users (the operator, the
// admin, the flood user, carol) run as nobody: TestJobPodsNeverRunAsRoot
// checks that is what an unmapped user gets where the site allows them.
func serverConfig(kubeconfig, dir, keyFile string) map[string]any {
	return map[string]any{
		"kubeconfig":     kubeconfig,
		"stateDir":       filepath.Join(dir, "state"),
		"listen":         "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false},
		// Every GPU governed, as the chart runs it (gpupods_test.go): every other probe holds with it on.
		"webhook": map[string]any{"enabled": true, "addr": "127.0.0.1:0",
			"governGPUs": map[string]any{"enabled": true, "action": "adopt", "taintNodes": true}},
		"rest": map[string]any{
			"jwtKeyFile": keyFile,
			"operators":  []string{operatorUser},
			"admins":     []string{adminUser},
			// Users see only their own jobs (Slurm's PrivateData=jobs): the probes read others' jobs.
			"privateData": []string{"jobs"},
			"submitRateLimit": map[string]any{"users": map[string]any{
				floodUser: map[string]any{"perSecond": 0.001, "burst": 2},
			}},
		},
		"slurm": map[string]any{"unmappedUsers": "run", "users": map[string]any{
			alice: map[string]any{"uid": 1001, "gid": 1001},
			bob:   map[string]any{"uid": 1002, "gid": 1002},
		}},
	}
}

// token mints a valid token for user with the server's key.
func (s *site) token(t *testing.T, user string) string {
	t.Helper()
	tok, err := slurmapi.MintToken(s.key, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// response is one REST answer: status, raw body and, when JSON, the
// decoded document.
type response struct {
	method, path string
	status       int
	header       http.Header
	body         []byte
	doc          map[string]any
}

// do sends method path (from the server root, e.g. api+"/jobs") as user,
// with body marshalled to JSON unless nil or already a string, and extra
// headers. A user of "" sends no token.
func (s *site) do(t *testing.T, user, method, path string, body any, header map[string]string) *response {
	t.Helper()
	h := map[string]string{}
	if user != "" {
		h["X-SLURM-USER-TOKEN"] = s.token(t, user)
	}
	for k, v := range header {
		h[k] = v
	}
	return s.raw(t, method, path, body, h)
}

// raw sends a request with exactly the headers given: for forged tokens.
func (s *site) raw(t *testing.T, method, path string, body any, header map[string]string) *response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := &response{method: method, path: path, status: resp.StatusCode, header: resp.Header}
	if r.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	_ = json.Unmarshal(r.body, &r.doc) // not every answer is JSON (job logs)
	return r
}

// get and del are do without a body or extra headers.
func (s *site) get(t *testing.T, user, path string) *response {
	t.Helper()
	return s.do(t, user, http.MethodGet, path, nil, nil)
}

func (s *site) del(t *testing.T, user, path string) *response {
	t.Helper()
	return s.do(t, user, http.MethodDelete, path, nil, nil)
}

// jobBody is a small job (one node, no GPUs, ten minutes) with fields
// set over it; a field set to nil is removed.
func jobBody(fields map[string]any) map[string]any {
	job := map[string]any{
		"name": "tenancy", "time_limit": map[string]any{"set": true, "number": 10},
		"environment": []string{"PATH=/bin:/usr/bin"}, "current_working_directory": "/tmp",
	}
	for k, v := range fields {
		if v == nil {
			delete(job, k)
		} else {
			job[k] = v
		}
	}
	return map[string]any{"script": "#!/bin/bash\nsleep 600\n", "job": job}
}

// submit posts jobBody(fields) as user.
func (s *site) submit(t *testing.T, user string, fields map[string]any) *response {
	t.Helper()
	return s.do(t, user, http.MethodPost, api+"/job/submit", jobBody(fields), nil)
}

// submitOK submits as user, requires an acknowledgement and returns the
// job id; the job is cancelled (as an operator) when the test ends.
func (s *site) submitOK(t *testing.T, user string, fields map[string]any) string {
	t.Helper()
	r := s.submit(t, user, fields)
	r.requireOK(t)
	n, ok := r.doc["job_id"].(float64)
	if !ok || n <= 0 {
		t.Fatalf("submit as %s: no job_id in %s", user, r.body)
	}
	id := formatID(n)
	t.Cleanup(func() { s.del(t, operatorUser, api+"/job/"+id) })
	return id
}

// job is the job's record as an operator sees it (scontrol show job).
func (s *site) job(t *testing.T, id string) map[string]any {
	t.Helper()
	r := s.get(t, operatorUser, api+"/job/"+id)
	r.requireOK(t)
	jobs, _ := r.doc["jobs"].([]any)
	if len(jobs) == 0 {
		t.Fatalf("job %s: no jobs[] in %s", id, r.body)
	}
	return jobs[0].(map[string]any)
}

// jobs are the jobs user sees in GET jobs (squeue).
func (s *site) jobs(t *testing.T, user string) []map[string]any {
	t.Helper()
	r := s.get(t, user, api+"/jobs")
	r.requireOK(t)
	list, _ := r.doc["jobs"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, j := range list {
		out = append(out, j.(map[string]any))
	}
	return out
}

// requireNoJobNamed fails the test if any job, seen by an operator, has
// name: a refused submission must leave nothing behind.
func (s *site) requireNoJobNamed(t *testing.T, name string) {
	t.Helper()
	for _, j := range s.jobs(t, operatorUser) {
		if j["name"] == name {
			t.Fatalf("a refused submission left job %v (%s) behind", j["job_id"], name)
		}
	}
}

var uniqueNames struct {
	sync.Mutex
	n int
}

// uniqueName is a job name no other job of this run has.
func uniqueName(prefix string) string {
	uniqueNames.Lock()
	defer uniqueNames.Unlock()
	uniqueNames.n++
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), uniqueNames.n)
}

// state is a job record's base state (PENDING, RUNNING, ...).
func state(j map[string]any) string {
	if s, ok := j["job_state"].([]any); ok && len(s) > 0 {
		return fmt.Sprint(s[0])
	}
	return ""
}

// waitAccounted waits until the ledger has job id (slurmdb answers for
// it), which the recorder writes shortly after the job is stored.
func (s *site) waitAccounted(t *testing.T, id string) map[string]any {
	t.Helper()
	var job map[string]any
	e2e.WaitFor(t, "slurmdb has job "+id, time.Minute, func(context.Context) (bool, error) {
		r := s.get(t, operatorUser, "/slurmdb/v0.0.45/job/"+id)
		jobs, _ := r.doc["jobs"].([]any)
		if r.status != http.StatusOK || len(jobs) == 0 {
			return false, fmt.Errorf("%s", r)
		}
		job = jobs[0].(map[string]any)
		return true, nil
	})
	return job
}

// requireOK fails the test unless the answer is 200.
func (r *response) requireOK(t *testing.T) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s %s: %d %s, want 200", r.method, r.path, r.status, r.body)
	}
}

// slurmError is one errors[] entry.
type slurmError struct {
	Number      int    `json:"error_number"`
	Error       string `json:"error"`
	Source      string `json:"source"`
	Description string `json:"description"`
}

// errors are the answer's errors[] entries.
func (r *response) errors() []slurmError {
	var doc struct {
		Errors []slurmError `json:"errors"`
	}
	_ = json.Unmarshal(r.body, &doc)
	return doc.Errors
}

// requireRefused fails the test unless the answer has status and an
// errors[] entry with Slurm error number (0: any number), and returns
// that entry for further checks on its text.
func (r *response) requireRefused(t *testing.T, status, number int) slurmError {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s %s: %d %s, want %d", r.method, r.path, r.status, r.body, status)
	}
	for _, e := range r.errors() {
		if number == 0 || e.Number == number {
			if e.Description == "" && e.Error == "" {
				t.Fatalf("%s %s: errors[] entry %d says nothing: %s", r.method, r.path, e.Number, r.body)
			}
			return e
		}
	}
	t.Fatalf("%s %s: %d without an errors[] entry numbered %d: %s", r.method, r.path, r.status, number, r.body)
	return slurmError{}
}

// String shows the request and its answer in messages.
func (r *response) String() string {
	return fmt.Sprintf("%s %s: %d %s", r.method, r.path, r.status, r.body)
}

// formatID writes a job id from a JSON number.
func formatID(n float64) string { return strconv.FormatUint(uint64(n), 10) }

// number reads a record's number: plain, or Slurm's no-value struct ({"set":true,"number":N});
// 0 when it is neither.
func number(v any) float64 {
	if m, ok := v.(map[string]any); ok {
		v = m["number"]
	}
	n, _ := v.(float64)
	return n
}
