package sbatch

import (
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		check func(o *Options) bool
	}{
		{"long with =", []string{"--partition=h100"}, func(o *Options) bool { return o.Partition == "h100" }},
		{"long with space", []string{"--partition", "h100"}, func(o *Options) bool { return o.Partition == "h100" }},
		{"short with space", []string{"-p", "h100"}, func(o *Options) bool { return o.Partition == "h100" }},
		{"short glued", []string{"-ph100"}, func(o *Options) bool { return o.Partition == "h100" }},
		{"unambiguous prefix", []string{"--part=a100"}, func(o *Options) bool { return o.Partition == "a100" }},
		{"node range", []string{"-N", "2-4"}, func(o *Options) bool { return o.Nodes == 2 && o.MaxNodes == 4 }},
		{"tasks and cpus", []string{"-n", "16", "--ntasks-per-node=8", "-c", "4"}, func(o *Options) bool {
			return o.NTasks == 16 && o.NTasksPerNode == 8 && o.CPUsPerTask == 4
		}},
		{"memory units", []string{"--mem=64G", "--mem-per-gpu", "80G"}, func(o *Options) bool { return o.Mem == 65536 && o.MemPerGPU == 81920 }},
		{"gres", []string{"--gres=gpu:h100:8"}, func(o *Options) bool {
			return len(o.GRES) == 1 && o.GRES[0] == GRES{Name: "gpu", Type: "h100", Count: 8}
		}},
		{"gpus", []string{"-G", "a100:2", "--gpus-per-task=1"}, func(o *Options) bool { return o.GPUs == "a100:2" && o.GPUsPerTask == "1" }},
		{"time", []string{"-t", "1-02:00:00"}, func(o *Options) bool { return o.Time == 26*time.Hour }},
		{"requeue then no-requeue", []string{"--requeue", "--no-requeue"}, func(o *Options) bool { return !o.Requeue && o.Set["no-requeue"] }},
		{"hold", []string{"-H"}, func(o *Options) bool { return o.Hold }},
		{"dependency", []string{"-d", "afterok:12:13"}, func(o *Options) bool { return o.Dependency == "afterok:12:13" }},
		{"array", []string{"--array=0-15%4"}, func(o *Options) bool { return o.Array == "0-15%4" }},
		{"pyxis image", []string{"--container-image=nvcr.io/nvidia/pytorch:24.05-py3"}, func(o *Options) bool {
			return o.ContainerImage == "nvcr.io/nvidia/pytorch:24.05-py3"
		}},
		{"names, files, misc", []string{"-J", "train", "-o", "out-%j.txt", "-e", "err-%j.txt", "-D", "/work", "--comment=x", "--export=ALL,FOO=1", "-A", "nlp", "-q", "high", "-b", "now+1hour"},
			func(o *Options) bool {
				return o.JobName == "train" && o.Output == "out-%j.txt" && o.Error == "err-%j.txt" && o.Chdir == "/work" &&
					o.Comment == "x" && o.Export == "ALL,FOO=1" && o.Account == "nlp" && o.QOS == "high" && o.Begin == "now+1hour"
			}},
		{"set records what was given", []string{"-p", "x"}, func(o *Options) bool { return o.Set["partition"] && !o.Set["account"] }},
	}
	for _, tc := range cases {
		o, _, _, err := Parse(tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.check(o) {
			t.Errorf("%s: unexpected options %+v", tc.name, o)
		}
	}
}

func TestParseOptionErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus=1"}, "unrecognized option --bogus"},
		{[]string{"-Z"}, "invalid option -Z"},
		{[]string{"--no"}, "ambiguous"},
		{[]string{"--partition"}, "requires a value"},
		{[]string{"--hold=yes"}, "takes no value"},
		{[]string{"-N", "0"}, "invalid node count"},
		{[]string{"-N", "4-2"}, "max below min"},
		{[]string{"--time=abc"}, "invalid time limit"},
		{[]string{"--mem=12Q"}, "invalid memory size"},
		{[]string{"--gres=gpu:h100:x"}, "not a number"},
		{[]string{"--gpus=0"}, "invalid GPU count"},
		{[]string{"--array=5-1"}, "ends before it starts"},
		{[]string{"--dependency=afterwards:1"}, "unknown type"},
		{[]string{"-n", "-3"}, "not a positive number"},
	}
	for _, tc := range cases {
		_, _, _, err := Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestParseStopsAtScriptAndWarnsOnIgnored(t *testing.T) {
	o, rest, warnings, err := Parse([]string{"--mail-type=END", "-p", "a", "train.sh", "--lr", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Partition != "a" || len(rest) != 3 || rest[0] != "train.sh" {
		t.Errorf("partition %q rest %q", o.Partition, rest)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "--mail-type") {
		t.Errorf("warnings = %q, want one about --mail-type", warnings)
	}
}

func TestParseScript(t *testing.T) {
	o, _, err := ParseScript("#!/bin/bash\n#SBATCH --gres=gpu:2 -N2\n#SBATCH -J \"big run\"\npython train.py\n#SBATCH -p ignored\n")
	if err != nil {
		t.Fatal(err)
	}
	if o.Nodes != 2 || o.JobName != "big run" || o.Partition != "" || len(o.GRES) != 1 {
		t.Errorf("got %+v", o)
	}
	if _, _, err := ParseScript("#!/bin/sh\n#SBATCH train.sh\n"); err == nil {
		t.Error("a non-option directive argument was accepted")
	}
}
