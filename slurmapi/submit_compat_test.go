package slurmapi

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSubmissionNothingSilent: each submission yields the job Slurm's
// documentation describes, and what Sluice does not honour is named in a
// warning or refused with Slurm's error, never dropped.
func TestSubmissionNothingSilent(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	env := []string{"HOME=/home/alice", "SLURM_CONF=/etc/slurm.conf", "FOO=1"}
	cases := []struct {
		name     string
		body     []byte
		check    func(d *JobDesc) bool
		warnings []string // substrings, one warning each
	}{
		{"mail-type directive warns", body(map[string]any{}, "#!/bin/sh\n#SBATCH --mail-type=END\n"), nil,
			[]string{"--mail-type is accepted but has no effect"}},
		{"REST mail_type warns", body(map[string]any{"mail_type": []string{"END"}, "mail_user": "a@b"}, script), nil,
			[]string{"job.mail_type: ignored: no mail is sent", "job.mail_user: ignored"}},
		{"unknown field warns as slurmrestd does", body(map[string]any{"colour": "blue"}, script), nil,
			[]string{"job.colour: unknown field"}},
		{"empty fields ask for nothing", body(map[string]any{"mail_type": []string{}, "licenses": "", "contiguous": false, "time_minimum": map[string]any{"set": false}}, script), nil, nil},
		// sbatch(1) --export: NONE keeps SLURM_* only; a list adds named
		// variables and pairs to SLURM_*; ALL keeps everything.
		{"#SBATCH --export=NONE", body(map[string]any{"environment": env}, "#!/bin/sh\n#SBATCH --export=NONE\n"), func(d *JobDesc) bool {
			return strings.Join(d.Environment, " ") == "SLURM_CONF=/etc/slurm.conf SLURM_EXPORT_ENV=NONE"
		}, nil},
		{"#SBATCH --export=FOO,BAR=2", body(map[string]any{"environment": env}, "#!/bin/sh\n#SBATCH --export=FOO,BAR=2\n"), func(d *JobDesc) bool {
			return strings.Join(d.Environment, " ") == "SLURM_CONF=/etc/slurm.conf FOO=1 BAR=2 SLURM_EXPORT_ENV=FOO,BAR=2"
		}, nil},
		{"#SBATCH --export=ALL,BAR=2", body(map[string]any{"environment": env}, "#!/bin/sh\n#SBATCH --export=ALL,BAR=2\n"), func(d *JobDesc) bool {
			return strings.Join(d.Environment, " ") == "HOME=/home/alice SLURM_CONF=/etc/slurm.conf FOO=1 BAR=2 SLURM_EXPORT_ENV=ALL,BAR=2"
		}, nil},
		{"a client's own --export wins over the directive", body(map[string]any{"environment": append(env, "SLURM_EXPORT_ENV=ALL")}, "#!/bin/sh\n#SBATCH --export=NONE\n"), func(d *JobDesc) bool {
			return len(d.Environment) == 4
		}, nil},
		{"argv: the script's arguments", body(map[string]any{"argv": []string{"job.sh", "a b", "c"}}, script), func(d *JobDesc) bool {
			return slices.Equal(d.Argv, []string{"a b", "c"})
		}, nil},
		// sbatch(1): "A time limit of zero requests that no time limit be
		// imposed"; the partition's MaxTime (48h) then applies.
		{"--time=0 is the partition's maximum", body(map[string]any{}, "#!/bin/sh\n#SBATCH --time=0\n"), func(d *JobDesc) bool {
			return d.TimeLimit == 48*time.Hour
		}, nil},
		{"--time=UNLIMITED is the partition's maximum", body(map[string]any{}, "#!/bin/sh\n#SBATCH --time=UNLIMITED\n"), func(d *JobDesc) bool {
			return d.TimeLimit == 48*time.Hour
		}, nil},
		{"REST time_limit INFINITE is the partition's maximum", body(map[string]any{"time_limit": map[string]any{"set": true, "infinite": true}}, script), func(d *JobDesc) bool {
			return d.TimeLimit == 48*time.Hour
		}, nil},
		{"node range warns that the minimum is used", body(map[string]any{}, "#!/bin/sh\n#SBATCH --nodes=2-4\n"), func(d *JobDesc) bool {
			return d.Nodes == 2 && d.MaxNodes == 4
		}, []string{"job.nodes: the job runs on its minimum of 2 nodes"}},
		// Slurm's JobRequeue=1 default.
		{"requeue by default", body(map[string]any{}, script), func(d *JobDesc) bool { return d.Requeue }, nil},
		{"--no-requeue", body(map[string]any{}, "#!/bin/sh\n#SBATCH --no-requeue\n"), func(d *JobDesc) bool { return !d.Requeue }, nil},
		{"REST requeue false", body(map[string]any{"requeue": false}, script), func(d *JobDesc) bool { return !d.Requeue }, nil},
		{"--mem-per-gpu directive", body(map[string]any{}, "#!/bin/sh\n#SBATCH --gpus-per-node=1 --mem-per-gpu=20G\n"), func(d *JobDesc) bool {
			return d.MemoryPerGPU == 20480
		}, nil},
		{"--input directive", body(map[string]any{}, "#!/bin/sh\n#SBATCH --input=in-%j.txt\n"), func(d *JobDesc) bool {
			return d.Stdin == "in-%j.txt"
		}, nil},
	}
	for _, tc := range cases {
		d, warnings, err := DecodeSubmission(tc.body, "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, now)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.check != nil && !tc.check(d) {
			t.Errorf("%s: unexpected %+v", tc.name, d)
		}
		if len(warnings) != len(tc.warnings) {
			t.Errorf("%s: warnings %q, want %d", tc.name, warnings, len(tc.warnings))
			continue
		}
		for i, w := range tc.warnings {
			if !strings.Contains(warnings[i], w) {
				t.Errorf("%s: warning %q, want one containing %q", tc.name, warnings[i], w)
			}
		}
	}
}

// TestSubmissionRefusesWhatCannotBeHonoured: Slurm's error for a feature
// the site does not have, before anything is stored.
func TestSubmissionRefusesWhatCannotBeHonoured(t *testing.T) {
	cases := []struct {
		name, body string
		number     int
		want       string
	}{
		{"licenses", `{"script":"#!/bin/sh\n","job":{"licenses":"matlab:1"}}`, ErrInvalidLicenses, "no licenses"},
		{"x11", `{"script":"#!/bin/sh\n","job":{"x11":["batch"]}}`, ErrX11NotAvailable, "X11"},
		{"burst buffer", `{"script":"#!/bin/sh\n","job":{"burst_buffer":"#DW jobdw"}}`, ErrInvalidBurstBuffer, "burst buffers"},
		{"immediate", `{"script":"#!/bin/sh\n","job":{"immediate":true}}`, ErrNotSupported, "waits in the queue"},
		{"licenses directive", `{"script":"#!/bin/sh\n#SBATCH -L matlab\n","job":{}}`, ErrRestInvalidJobs, "Invalid license specification"},
		{"--wrap in a script", `{"script":"#!/bin/sh\n#SBATCH --wrap=hostname\n","job":{}}`, ErrRestInvalidJobs, "--wrap is for the command line"},
		{"NUL in argv", `{"script":"#!/bin/sh\n","job":{"argv":["s","a\u0000b"]}}`, ErrRestInvalidJobs, "NUL"},
	}
	for _, tc := range cases {
		_, _, err := DecodeSubmission([]byte(tc.body), "alice", testCatalog(), SubmitPolicy{}, time.Now())
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if err.Number != tc.number || !strings.Contains(err.Description, tc.want) || err.Status != 400 {
			t.Errorf("%s: %d %d %q, want 400 %d containing %q", tc.name, err.Status, err.Number, err.Description, tc.number, tc.want)
		}
	}
}
