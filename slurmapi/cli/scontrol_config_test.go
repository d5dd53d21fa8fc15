package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
)

// TestScontrolShowConfigLayout: "Configuration data as of", then Slurm's keys in
// slurmctld's order, padded as slurm_print_key_pairs pads them; settings the
// server did not give are left out, not filled in.
func TestScontrolShowConfigLayout(t *testing.T) {
	started := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	halfLife := int64(14 * 24 * 3600)
	cfg := client.ControllerConfig{LastUpdate: started, BootTime: started, AccountingStorageType: "accounting_storage/sluice",
		AuthType: "auth/jwt", ClusterName: "sluice", MaxArraySize: 1001, MaxJobID: 2130706431, PriorityDecayHalfLife: &halfLife,
		PriorityType: "priority/multifactor", PrivateData: []string{"jobs", "usage"}, SchedulerType: "sched/sluice",
		SelectType: "select/sluice", SlurmUser: "slurm", SlurmctldHost: "sluice-0", SlurmVersion: "25.11.2"}
	var b strings.Builder
	writeConfig(&b, cfg, time.UTC)
	checkGolden(t, "scontrol-show-config.golden", b.String())

	b.Reset()
	writeConfig(&b, client.ControllerConfig{LastUpdate: started, ClusterName: "sluice"}, time.UTC)
	if got, want := b.String(), "Configuration data as of 2026-03-10T09:00:00\nClusterName             = sluice\nPrivateData             = none\n"; got != want {
		t.Errorf("a server giving little:\n%s\nwant only what it gave (and PrivateData none):\n%s", got, want)
	}
}

// TestScontrolShowConfigFromTheServer: `scontrol show config` (and `show conf`,
// as scontrol takes a prefix) reads the server's settings, then prints the
// controllers' state as scontrol does after them.
func TestScontrolShowConfigFromTheServer(t *testing.T) {
	key := []byte("scontrol-config-test-key-32-byte")
	srv, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: key, SlurmUser: "slurm"}, Hostname: "ctl",
		ClusterName: "gpu-east", MaxJobID: 67043328}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter()
	r.Handle(slurmapi.ConfigPath, srv.ConfigHandler()).Methods(http.MethodGet)
	r.PathPrefix("/slurm/").Handler(srv)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	t.Setenv("SLUICE_URL", ts.URL)
	tok, err := slurmapi.MintToken(key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.FromEnv(tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"config", "conf"} {
		var out bytes.Buffer
		if err := scontrolShow(context.Background(), c, &out, what, "", showOptions{}); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, want := range []string{"ClusterName             = gpu-east\n", "MaxArraySize            = 1001\n", "MaxJobId                = 67043328\n",
			"SlurmUser               = slurm\n", "SlurmctldHost[0]        = ctl\n", "AuthType                = auth/jwt\n",
			"\nSlurmctld(primary) at ctl is UP\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("show %s: no %q in\n%s", what, want, got)
			}
		}
		if !strings.HasPrefix(got, "Configuration data as of ") {
			t.Errorf("show %s starts %q", what, got[:min(len(got), 40)])
		}
	}
}
