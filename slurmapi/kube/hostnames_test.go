package kube

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/slurmapi"
)

// TestJobHostsAreNodeNamesInSlurmOrder: the names a job sees are its nodes' names in the
// order a Slurm node list expands, so node 0 (the batch host) is the first of
// `scontrol show hostnames`; names that cannot be pod hostnames fall back as documented.
func TestJobHostsAreNodeNamesInSlurmOrder(t *testing.T) {
	pg := PodGroupFor(&slurmapi.JobDesc{Name: "x", User: "alice", Account: "nlp", Script: "#!/bin/sh\n", Nodes: 3}, 42)
	for _, tc := range []struct {
		name  string
		nodes []string
		hosts string // by node index
		rank  []int  // node index of each bind
	}{
		{"numbers sort as numbers", []string{"h100-10", "h100-2", "h100-9"}, "h100-2 h100-9 h100-10", []int{2, 0, 1}},
		{"prefixes sort as strings", []string{"h100-0", "a100-1"}, "a100-1 h100-0", []int{1, 0}},
		{"zero padding kept", []string{"gpu-010", "gpu-002"}, "gpu-002 gpu-010", []int{1, 0}},
		{"FQDN nodes by their first label", []string{"ip-10-0-1-9.ec2.internal", "ip-10-0-1-5.ec2.internal"}, "ip-10-0-1-5 ip-10-0-1-9", []int{1, 0}},
		{"first labels that clash: pod names", []string{"gpu.rack1.example", "gpu.rack2.example"}, "job-42-0 job-42-1", []int{0, 1}},
		{"not a DNS label: pod names", []string{"GPU_1", "GPU_2"}, "job-42-0 job-42-1", []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			binds := make([]bridge.Bind, len(tc.nodes))
			for i, n := range tc.nodes {
				binds[i] = bridge.Bind{Node: n, Group: memberName}
			}
			hosts, rank := jobHosts(pg, binds)
			if got := strings.Join(hosts, " "); got != tc.hosts {
				t.Errorf("hosts %q, want %q", got, tc.hosts)
			}
			for i := range rank {
				if rank[i] != tc.rank[i] {
					t.Errorf("ranks %v, want %v", rank, tc.rank)
					break
				}
			}
		})
	}
}

// TestBatchHostIsNodeZeroWhateverTheBindOrder: the core may bind a job's nodes in any
// order; the pod on the node that sorts first is job-N-0 and runs the script, and every
// pod's SLURM_NODEID is its node's place in SLURM_JOB_NODELIST.
func TestBatchHostIsNodeZeroWhateverTheBindOrder(t *testing.T) {
	pg := PodGroupFor(&slurmapi.JobDesc{Name: "x", User: "alice", Account: "nlp", Script: "#!/bin/sh\nhostname\n", Nodes: 2, WorkDir: "/home/alice"}, 42)
	binds := []bridge.Bind{{Node: "h100-10", Group: memberName}, {Node: "h100-9", Group: memberName}}
	pods, err := BuildPods(pg, binds, RunAs{LauncherImage: testLauncherImage, Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ name, host, nodeID, script string }{
		{"job-42-1", "h100-10", "1", ""},
		{"job-42-0", "h100-9", "0", "#!/bin/sh\nhostname\n"},
	} {
		env := envOf(pods[i])
		if pods[i].Name != want.name || pods[i].Spec.Hostname != want.host || env["SLURM_NODEID"] != want.nodeID ||
			env["SLUICE_SCRIPT"] != want.script || env["SLURM_JOB_NODELIST"] != "h100-[9-10]" {
			t.Errorf("pod for bind %d (%s): name %s hostname %s SLURM_NODEID %s NODELIST %s script %q; want %+v",
				i, binds[i].Node, pods[i].Name, pods[i].Spec.Hostname, env["SLURM_NODEID"], env["SLURM_JOB_NODELIST"], env["SLUICE_SCRIPT"], want)
		}
	}
}
