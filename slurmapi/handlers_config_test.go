package slurmapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi/openapi"
)

// TestControllerConfig: what `scontrol show config` reads is this server's own
// settings, and only for a valid token.
func TestControllerConfig(t *testing.T) {
	key := []byte("controller-config-test-key-32-by")
	week := int64(7 * 24 * 3600)
	tests := []struct {
		name    string
		cfg     Config
		backend Backend
		check   func(t *testing.T, c ControllerConfig)
	}{
		{"defaults, no ledger", Config{Auth: AuthConfig{Key: key, SlurmUser: "slurm"}, Hostname: "ctl"}, nil,
			func(t *testing.T, c ControllerConfig) {
				if c.ClusterName != "sluice" || c.SlurmctldHost != "ctl" || c.SlurmUser != "slurm" || c.AuthType != "auth/jwt" ||
					c.MaxArraySize != 1001 || c.MaxJobID != 0 || len(c.PrivateData) != 0 {
					t.Errorf("%+v", c)
				}
				if c.AccountingStorageType != "accounting_storage/none" || c.PriorityDecayHalfLife != nil {
					t.Errorf("without a ledger: %s, half-life %v", c.AccountingStorageType, c.PriorityDecayHalfLife)
				}
			}},
		{"the site's settings", Config{Auth: AuthConfig{Key: key, PrivateJobs: true, PrivateUsage: true}, ClusterName: "gpu-east",
			Submit: SubmitPolicy{MaxArraySize: 5001}, MaxJobID: 67043328}, WithLedger(nil, accounting.Ledger{}),
			func(t *testing.T, c ControllerConfig) {
				if c.ClusterName != "gpu-east" || c.MaxArraySize != 5001 || c.MaxJobID != 67043328 ||
					!slices.Equal(c.PrivateData, []string{"jobs", "usage"}) {
					t.Errorf("%+v", c)
				}
				if c.AccountingStorageType != "accounting_storage/sluice" || c.PriorityDecayHalfLife == nil || *c.PriorityDecayHalfLife != week {
					t.Errorf("with the ledger: %s, half-life %v, want its 7 days", c.AccountingStorageType, c.PriorityDecayHalfLife)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer(tc.cfg, tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			h := srv.ConfigHandler()
			anon := httptest.NewRecorder()
			h.ServeHTTP(anon, httptest.NewRequest(http.MethodGet, ConfigPath, nil))
			if anon.Code != http.StatusUnauthorized {
				t.Errorf("without a token: %d, want 401", anon.Code)
			}
			tok, err := MintToken(key, "alice", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, ConfigPath, nil)
			req.Header.Set("X-SLURM-USER-TOKEN", tok)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var c ControllerConfig
			if err := json.Unmarshal(rec.Body.Bytes(), &c); rec.Code != http.StatusOK || err != nil {
				t.Fatalf("%d %v: %s", rec.Code, err, rec.Body)
			}
			if c.SlurmVersion != srv.specs[openapi.Latest].Release || c.SlurmVersion == "" || c.BootTime.IsZero() {
				t.Errorf("SLURM_VERSION %q, BOOT_TIME %v: want the newest document's release and the start", c.SlurmVersion, c.BootTime)
			}
			tc.check(t, c)
		})
	}
}
