package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
)

// scontrol ping against a real REST server prints the controller's line as Slurm's.
func TestScontrolPing(t *testing.T) {
	key := []byte("scontrol-ping-test-key-32-bytes!")
	srv, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: key}, Hostname: "ctl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
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
	var out bytes.Buffer
	if err := scontrolPing(context.Background(), c, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "Slurmctld(primary) at ctl is UP\n"; got != want {
		t.Errorf("scontrol ping printed %q, want %q", got, want)
	}
}
