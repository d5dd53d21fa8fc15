package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/cli"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// runCLI runs one of sluice's Slurm commands as user against ts, as a user's shell
// would (SLUICE_URL, SLURM_JWT), and returns what it printed and its error.
func runCLI(t *testing.T, ts *httptest.Server, user string, args ...string) (string, error) {
	t.Helper()
	tok, err := slurmapi.MintToken(slurmKey, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_URL", ts.URL)
	t.Setenv("SLURM_JWT", tok)
	var run func([]string) error
	for _, c := range cli.Commands() {
		if c.Name == args[0] {
			run = c.Run
		}
	}
	if run == nil {
		t.Fatalf("no command %s", args[0])
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	runErr := run(args[1:])
	os.Stdout = stdout
	w.Close()
	return <-done, runErr
}

// TestSlurmReservation: an operator books h100-0 (8 GPUs) for account nlp from a minute
// on with scontrol; scontrol show reservation and sinfo -T print it in Slurm's layouts;
// alice (nlp) submits into it with --reservation, which her job's PodGroup carries and
// squeue and scontrol show; bob (vision) may not, an unknown name is invalid, a user may
// not book, and scontrol delete removes it. A long vision job kept to h100-0 does not
// start there while a short one that ends before the window does, and alice's job waits
// (Reservation) until the window opens.
func TestSlurmReservation(t *testing.T) {
	ts := slurmSite(t)
	ctx := context.Background()
	c, err := kube.NewClient(Rig(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.Reservation{})
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(kube.Namespace("vision")), client.HasLabels{v1alpha1.JobIDLabel})
	})

	book := []string{"scontrol", "create", "reservation", "ReservationName=nlp-hack", "StartTime=now+2minutes", "Duration=10",
		"Nodes=h100-0", "Accounts=nlp"}
	if _, err := runCLI(t, ts, "alice", book...); err == nil || !strings.Contains(err.Error(), "only operators and administrators") {
		t.Errorf("alice booked a reservation: %v", err)
	}
	out, err := runCLI(t, ts, "slurm", book...)
	if err != nil || out != "Reservation created: nlp-hack\n" {
		t.Fatalf("scontrol create reservation: %q %v", out, err)
	}
	if _, err := runCLI(t, ts, "slurm", book...); err == nil || !strings.Contains(err.Error(), "Duplicate reservation name") {
		t.Errorf("a second nlp-hack: %v", err)
	}
	var obj v1alpha1.Reservation
	if err := c.Get(ctx, client.ObjectKey{Name: "nlp-hack"}, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Spec.Duration == nil || obj.Spec.Duration.Duration != 10*time.Minute || fmt.Sprint(obj.Spec.Nodes, obj.Spec.Accounts) != "[h100-0] [nlp]" ||
		time.Until(obj.Spec.StartTime.Time) > 2*time.Minute || time.Until(obj.Spec.StartTime.Time) < time.Minute {
		t.Errorf("the Reservation object: %+v", obj.Spec)
	}

	out, err = runCLI(t, ts, "alice", "scontrol", "show", "reservation", "nlp-hack")
	for _, want := range []string{"ReservationName=nlp-hack StartTime=", " Duration=00:10:00\n",
		"   Nodes=h100-0 NodeCnt=1 CoreCnt=128 Features=(null) PartitionName=(null) Flags=SPEC_NODES\n", "   TRES=cpu=128,gres/gpu=8\n",
		"   Users=(null) Groups=(null) Accounts=nlp Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a\n", "   MaxStartDelay=(null)\n"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("scontrol show reservation lacks %q: %v\n%s", want, err, out)
		}
	}
	out, err = runCLI(t, ts, "alice", "sinfo", "-T")
	if lines := strings.Split(out, "\n"); err != nil || len(lines) != 3 ||
		lines[0] != "RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST" ||
		!strings.HasPrefix(lines[1], "nlp-hack   INACTIVE  ") || !strings.HasSuffix(lines[1], "     00:10:00  h100-0") {
		t.Errorf("sinfo -T: %v\n%s", err, out)
	}

	// Submitting into it: alice's account is listed; bob's is not; an unknown name is invalid.
	job := submit(t, ts, "#!/bin/bash\n#SBATCH --reservation=nlp-hack -N 1 --gres=gpu:h100:8 -t 5\npython train.py\n", []string{"SLUICE_SIM_DURATION=30s"}, "")
	var pg v1alpha1.PodGroup
	if err := c.Get(ctx, client.ObjectKey{Namespace: kube.Namespace("nlp"), Name: kube.PodGroupName(uint32(job))}, &pg); err != nil {
		t.Fatal(err)
	}
	if got := pg.Annotations[v1alpha1.ReservationAnnotation]; got != "nlp-hack" {
		t.Errorf("job %d's PodGroup has reservation annotation %q", job, got)
	}
	if _, doc := slurmCall(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d", job), ""); doc["jobs"].([]any)[0].(map[string]any)["resv_name"] != "nlp-hack" {
		t.Errorf("job_info's resv_name: %v", doc["jobs"])
	}
	if out, err := runCLI(t, ts, "alice", "squeue", "-h", "-R", "nlp-hack", "-o", "%i %v"); err != nil || out != fmt.Sprintf("%d nlp-hack\n", job) {
		t.Errorf("squeue -R nlp-hack -o '%%i %%v': %q %v", out, err)
	}
	if out, err := runCLI(t, ts, "alice", "scontrol", "show", "job", fmt.Sprint(job)); err != nil || !strings.Contains(out, "\n   Reservation=nlp-hack\n") {
		t.Errorf("scontrol show job: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		user, reservation string
		status, number    int
	}{{"bob", "nlp-hack", http.StatusForbidden, slurmapi.ErrReservationAccess}, {"alice", "nope", http.StatusBadRequest, slurmapi.ErrReservationInvalid}} {
		body := fmt.Sprintf(`{"script":"#!/bin/sh\nhostname\n","job":{"environment":["PATH=/bin"],"reservation":%q}}`, tc.reservation)
		status, doc := slurmCall(t, ts, tc.user, "POST", submitPath, body)
		errs, _ := doc["errors"].([]any)
		if status != tc.status || len(errs) == 0 || errs[0].(map[string]any)["error_number"] != float64(tc.number) {
			t.Errorf("%s into %s: %d %v, want %d %d", tc.user, tc.reservation, status, doc["errors"], tc.status, tc.number)
		}
	}

	reservedWindow(t, ts, job)

	out, err = runCLI(t, ts, "slurm", "scontrol", "update", "ReservationName=nlp-hack", "Users+=bob", "Duration=20")
	if err != nil || out != "Reservation updated.\n" {
		t.Errorf("scontrol update reservation: %q %v", out, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "nlp-hack"}, &obj); err != nil || fmt.Sprint(obj.Spec.Users) != "[bob]" || obj.Spec.Duration.Duration != 20*time.Minute {
		t.Errorf("updated: %+v %v", obj.Spec, err)
	}
	if _, err := runCLI(t, ts, "slurm", "scontrol", "delete", "reservation", "nlp-hack"); err != nil {
		t.Fatalf("scontrol delete reservation: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "nlp-hack"}, &obj); !apierrors.IsNotFound(err) {
		t.Errorf("deleted reservation still there: %v", err)
	}
	if out, err := runCLI(t, ts, "alice", "sinfo", "-T"); err != nil || out != "No reservations in the system\n" {
		t.Errorf("sinfo -T after delete: %q %v", out, err)
	}
}

// reservedWindow is what needs the scheduler's adapter: before the window (2 minutes
// away) a vision job kept to h100-0 for an hour would run into it and waits, one of a
// minute starts; alice's job waits for the window (Reservation), then runs on h100-0.
func reservedWindow(t *testing.T, ts *httptest.Server, nlpJob int) {
	t.Helper()
	bob := func(limit string) int {
		body := fmt.Sprintf(`{"script":"#!/bin/sh\n#SBATCH -N 1 --gres=gpu:h100:8 -w h100-0 -t %s\nhostname\n","job":{"environment":["PATH=/bin","SLUICE_SIM_DURATION=20s"]}}`, limit)
		status, doc := slurmCall(t, ts, "bob", "POST", submitPath, body)
		if status != http.StatusOK {
			t.Fatalf("bob's submit: %d %v", status, doc)
		}
		return int(doc["job_id"].(float64))
	}
	long, short := bob("60"), bob("1")
	waitState(t, ts, short, "RUNNING", 90*time.Second)
	if j := showJob(t, ts, long); j.state != "PENDING" {
		t.Errorf("bob's hour-long job on h100-0 is %s before the reservation, want PENDING", j.state)
	}
	// The scheduler says why a job waits once it has waited PendingStatusDelay.
	WaitFor(t, "alice's job waits for the window, bob's long one for the reserved node", 30*time.Second, func(context.Context) (bool, error) {
		a, l := showJob(t, ts, nlpJob), showJob(t, ts, long)
		return a.state == "PENDING" && a.reason == "Reservation" && l.state == "PENDING" && l.reason == "Resources",
			fmt.Errorf("alice %+v, bob's long job %+v", a, l)
	})
	waitState(t, ts, short, "COMPLETED", 90*time.Second)
	if j := waitState(t, ts, nlpJob, "RUNNING", 3*time.Minute); j.nodes != "h100-0" && j.nodes != "<nil>" {
		t.Errorf("alice's job runs on %s, want the reservation's h100-0", j.nodes)
	}
	if j := showJob(t, ts, long); j.state != "PENDING" {
		t.Errorf("bob's hour-long job is %s inside the window, want PENDING", j.state)
	}
}
