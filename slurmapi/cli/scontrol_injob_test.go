package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// TestScontrolShowJobInsideTheJob: a job's pods hold no token, yet scripts
// read their own record (`scontrol show job $SLURM_JOB_ID | grep NodeList`);
// scontrol answers it from the environment the pod factory gives the batch
// host. Another job, or a caller with a token, goes to the server.
func TestScontrolShowJobInsideTheJob(t *testing.T) {
	d := &slurmapi.JobDesc{Name: "train", User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/sh\nsrun hostname\n",
		Nodes: 2, Tasks: 4, TasksPerNode: 2, CPUsPerTask: 2, TimeLimit: 90 * time.Minute, WorkDir: "/home/alice/run", Stdout: "out-%j.txt"}
	pg := kube.PodGroupFor(d, 42)
	binds := []bridge.Bind{{Node: "h100-3"}, {Node: "h100-4"}}
	pods, err := kube.BuildPods(pg, binds, kube.RunAs{Image: "img", LauncherImage: "sluice:test", LaunchKey: "k",
		Start: time.Unix(1_800_000_000, 0), TimeLimit: 90 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{launch.EnvRunDir: "/run/sluice"} // the launcher adds it for the script
	for _, e := range pods[0].Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	getenv := func(k string) string { return env[k] }
	show := showOptions{now: time.Unix(1_800_000_600, 0)}

	var out strings.Builder
	ok, err := inJobShowJob(&out, "job", "42", "", show, getenv)
	if !ok || err != nil {
		t.Fatalf("show job 42 inside job 42: handled %v, %v", ok, err)
	}
	for _, want := range []string{"JobId=42 JobName=train", "UserId=alice", "Account=nlp", "JobState=RUNNING", "Partition=h100",
		"NodeList=h100-[3-4]", "BatchHost=h100-3", "NumNodes=2", "NumTasks=4", "CPUs/Task=2", "TimeLimit=01:30:00",
		"RunTime=00:10:00", "BatchFlag=1", "StdOut=/home/alice/run/out-42.txt"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("scontrol show job inside the job lacks %q:\n%s", want, out.String())
		}
	}
	for _, tc := range []struct{ what, name, token string }{
		{"job", "43", ""},        // another job: the server's
		{"job", "42", "a-token"}, // a token: the server's full record
		{"node", "", ""},         // nodes: the server's
		{"hostnames", "", ""},    // answered elsewhere, without a server
	} {
		if ok, _ := inJobShowJob(&out, tc.what, tc.name, tc.token, show, getenv); ok {
			t.Errorf("show %s %q (token %q) was answered from the job's environment", tc.what, tc.name, tc.token)
		}
	}
}
