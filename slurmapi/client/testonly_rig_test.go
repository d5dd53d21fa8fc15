package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// sbatch --test-only: a job the server would take is answered with where it would wait
// and nothing is stored (no new job, no job id taken); one it would refuse is refused
// with Slurm's error, as a submission is.
func TestSubmitTestOnlyOnRig(t *testing.T) {
	ts := siteServer(t)
	alice := as(t, ts, "alice")
	ctx := context.Background()
	job := map[string]any{"script": "#!/bin/sh\ntrue\n", "environment": []string{"PATH=/bin"}, "partition": "h100"}
	before, _, err := alice.Submit(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	msg, _, err := alice.TestSubmit(ctx, job)
	if err != nil || !strings.Contains(msg, "would be accepted in partition h100") {
		t.Errorf("test-only: %q, %v; want where the job would wait", msg, err)
	}
	bad := map[string]any{"script": "#!/bin/sh\ntrue\n", "environment": []string{"PATH=/bin"}, "partition": "v100"}
	if _, _, err := alice.TestSubmit(ctx, bad); !client.IsBadRequest(err) || !strings.Contains(err.Error(), "v100") {
		t.Errorf("test-only of an unknown partition: %v, want 400 naming it", err)
	}
	after, _, err := alice.Submit(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Errorf("job ids %d then %d: the test-only submissions took %d ids", before, after, after-before-1)
	}
	for _, id := range []uint32{before, after} {
		_ = alice.Cancel(ctx, id, "")
	}
}
