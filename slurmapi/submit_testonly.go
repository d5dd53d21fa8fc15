package slurmapi

import (
	"net/http"
	"strings"
)

// TestOnlyHeader asks job/submit to check a submission as sbatch --test-only does:
// everything a submission is checked for (fields, script directives, partition, account,
// QOS, limits a node can hold, dependencies, the MaxSubmitJobs limits), and nothing
// stored, no job id taken.
// slurmrestd has no such request; Sluice's sbatch sends it for --test-only.
const TestOnlyHeader = "X-Sluice-Test-Only"

// testOnly reports whether the request asks only for the check.
func testOnly(r *http.Request) bool {
	v := strings.ToLower(strings.TrimSpace(r.Header.Get(TestOnlyHeader)))
	return v == "1" || v == "true" || v == "yes"
}

// testOnlyAnswer is job/submit's answer to a test-only submission that passed: job id 0
// and the message sbatch prints. Sluice does not estimate start times (squeue --start
// says N/A), so the message says where the job would wait instead of when it would start.
func testOnlyAnswer(d *JobDesc, cat *Catalog) map[string]any {
	qos := d.QOS
	if qos == "" {
		qos = cat.defaultQOS(d.Account)
	}
	msg := "the job would be accepted in partition " + d.Partition + " (account " + d.Account + ", QOS " + qos +
		"); Sluice does not estimate start times"
	return map[string]any{
		"job_id": int64(0), "step_id": "batch", "job_submit_user_msg": msg,
		"result": map[string]any{"job_id": int64(0), "step_id": "batch", "job_submit_user_msg": msg, "error_code": 0, "error": ""},
	}
}
