package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/recorder"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// TestSlurmJobStepsReachTheLedger: a 2-node job's pods run the launcher
// from the init container and mount the job's launch key Secret, which no
// other pod mounts; when the batch host ends with a step report as its
// termination message (what slurmapi/launch writes, played here by kwok),
// the recorder puts JOBID.batch and JOBID.0 into the ledger with their
// exit codes, as sacct -j lists them.
func TestSlurmJobStepsReachTheLedger(t *testing.T) {
	ts := slurmSite(t)
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rec, err := recorder.New(recorder.Config{Store: db, RESTConfig: Rig(t).RESTConfig(), FlushInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = rec.Run(rctx) }()
	t.Cleanup(func() { stop(); <-done })

	t0 := time.Now().Truncate(time.Second)
	report := accounting.EncodeSteps([]accounting.Step{
		{StepID: "batch", Name: "batch", State: accounting.StateFailed, ExitCode: 3, Start: t0, End: t0.Add(2 * time.Second), Tasks: 1, NodeList: "n", TRES: accounting.TRES{CPUs: 1, Nodes: 1}},
		{StepID: "0", Name: "python", State: accounting.StateFailed, ExitCode: 3, Start: t0, End: t0.Add(time.Second), Tasks: 2, NodeList: "n-[0-1]", TRES: accounting.TRES{CPUs: 2, Nodes: 2}},
	})
	id := submit(t, ts, "#!/bin/bash\n#SBATCH -N 2 --gres=gpu:h100:1\nsrun python train.py\nexit 3\n",
		[]string{"SLUICE_SIM_DURATION=2s", "SLUICE_SIM_EXIT_CODE=3", kube.SimMessageEnv + "=" + report}, "")
	var pods []corev1.Pod
	WaitFor(t, fmt.Sprintf("job %d's 2 pods", id), 90*time.Second, func(ctx context.Context) (bool, error) {
		pods = jobPods(t, ctx, id)
		return len(pods) == 2, fmt.Errorf("%d pods", len(pods))
	})
	secret := ""
	for _, p := range pods {
		if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Name != "sluice-launcher" || p.Spec.Containers[0].Command[0] != "/sluice/sluice" {
			t.Errorf("pod %s does not run the launcher: init %v, command %v", p.Name, p.Spec.InitContainers, p.Spec.Containers[0].Command)
		}
		for _, v := range p.Spec.Volumes {
			if v.Secret != nil {
				secret = v.Secret.SecretName
			}
		}
	}
	if _, err := Rig(t).Client().CoreV1().Secrets(kube.Namespace("nlp")).Get(ctx, secret, metav1.GetOptions{}); secret == "" || err != nil {
		t.Fatalf("launch key Secret %q: %v", secret, err)
	}
	all, err := Rig(t).Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		for _, v := range p.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == secret && p.Labels["sluice.dev/job-id"] != fmt.Sprint(id) {
				t.Errorf("pod %s/%s of another job mounts job %d's launch key", p.Namespace, p.Name, id)
			}
		}
	}
	waitState(t, ts, id, "FAILED", 90*time.Second)
	var steps []accounting.Step
	WaitFor(t, fmt.Sprintf("job %d's steps in the ledger", id), time.Minute, func(ctx context.Context) (bool, error) {
		steps, err = db.Steps(ctx, []int64{int64(id)})
		return len(steps) == 2, fmt.Errorf("%d steps (%v)", len(steps), err)
	})
	if steps[0].StepID != "batch" || steps[0].ExitCode != 3 || steps[1].StepID != "0" || steps[1].State != accounting.StateFailed || steps[1].Tasks != 2 {
		t.Errorf("ledger steps %+v", steps)
	}
}
