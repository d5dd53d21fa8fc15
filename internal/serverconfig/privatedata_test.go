package serverconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// rest.privateData takes Slurm's jobs, accounts, usage and users, each turning on
// its own part of the REST API's privacy; Slurm's other values, and anything
// else, stop the start with a message naming what is supported.
func TestPrivateDataConfig(t *testing.T) {
	tests := []struct {
		yaml    string
		want    slurmapi.AuthConfig
		wantErr []string // substrings
	}{
		{yaml: "", want: slurmapi.AuthConfig{}},
		{yaml: "privateData: [jobs]", want: slurmapi.AuthConfig{PrivateJobs: true}},
		{yaml: "privateData: [users]", want: slurmapi.AuthConfig{PrivateUsers: true}},
		{yaml: "privateData: [accounts, usage]", want: slurmapi.AuthConfig{PrivateAccounts: true, PrivateUsage: true}},
		{yaml: "privateData: [jobs, accounts, usage, users]", want: slurmapi.AuthConfig{PrivateJobs: true, PrivateAccounts: true, PrivateUsage: true, PrivateUsers: true}},
		{yaml: "privateData: [users, reservations]", wantErr: []string{`rest.privateData "reservations"`, "not implemented", "supported: jobs, accounts, usage, users"}},
		{yaml: "privateData: [cloud]", wantErr: []string{`"cloud"`, "not implemented"}},
		{yaml: "privateData: [job]", wantErr: []string{`rest.privateData "job"`, "supported: jobs, accounts, usage, users"}},
		{yaml: "privateData: [all]", wantErr: []string{`rest.privateData "all"`, "supported: jobs, accounts, usage, users"}},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		if err := os.WriteFile(path, []byte("rest:\n  "+tt.yaml+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if tt.wantErr != nil {
			for _, says := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), says) {
					t.Errorf("%s: error %v, want one saying %q", tt.yaml, err, says)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		var got slurmapi.AuthConfig
		c.REST.ApplyPrivateData(&got)
		if got.PrivateJobs != tt.want.PrivateJobs || got.PrivateAccounts != tt.want.PrivateAccounts ||
			got.PrivateUsage != tt.want.PrivateUsage || got.PrivateUsers != tt.want.PrivateUsers {
			t.Errorf("%s: jobs/accounts/usage/users private = %v/%v/%v/%v, want %v/%v/%v/%v", tt.yaml,
				got.PrivateJobs, got.PrivateAccounts, got.PrivateUsage, got.PrivateUsers,
				tt.want.PrivateJobs, tt.want.PrivateAccounts, tt.want.PrivateUsage, tt.want.PrivateUsers)
		}
	}
}
