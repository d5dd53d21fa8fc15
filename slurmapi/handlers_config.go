package slurmapi

// route: GET /sluice/v1/config -> (*Server).ConfigHandler, mounted by the
// binary next to the API (ConfigPath), as JobLogPath: slurmrestd has no
// endpoint for slurmctld's configuration, so this is Sluice's own.

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi/openapi"
)

// ConfigPath is where `sluice scontrol show config` reads the settings this
// server runs with.
const ConfigPath = "/sluice/v1/config"

// ControllerConfig is what `scontrol show config` prints: only settings this
// server really has, each with its value here. A Slurm setting with no
// counterpart in Sluice (SlurmctldPort, ProctrackType, a site-wide
// PreemptMode: Sluice keeps one per QOS) is left out rather than given a
// value that would mislead a script reading it.
type ControllerConfig struct {
	// LastUpdate is when the configuration was read: the server's start, as
	// nothing reloads it later (Queues and QOS are objects, not settings).
	LastUpdate time.Time `json:"last_update"`
	BootTime   time.Time `json:"boot_time"`
	// AccountingStorageType is accounting_storage/sluice with the ledger
	// (the name the REST meta gives it), accounting_storage/none without.
	AccountingStorageType string `json:"accounting_storage_type"`
	AuthType              string `json:"auth_type"`
	ClusterName           string `json:"cluster_name"`
	MaxArraySize          int    `json:"max_array_size"`
	MaxJobID              uint32 `json:"max_job_id,omitempty"`
	// PriorityDecayHalfLife is the ledger's usage half-life in seconds (0:
	// no decay), which sshare and fair share read; absent without a ledger.
	PriorityDecayHalfLife *int64   `json:"priority_decay_half_life,omitempty"`
	PriorityType          string   `json:"priority_type"`
	PrivateData           []string `json:"private_data"`
	SchedulerType         string   `json:"scheduler_type"`
	SelectType            string   `json:"select_type"`
	SlurmUser             string   `json:"slurm_user"`
	SlurmctldHost         string   `json:"slurmctld_host"`
	// SlurmVersion is the Slurm release the newest data_parser version
	// answers as (meta.slurm.release there).
	SlurmVersion string `json:"slurm_version"`
}

// ConfigHandler serves ConfigPath to any valid token, as slurmctld shows its
// configuration to every user.
func (s *Server) ConfigHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id, err := s.cfg.Auth.Authenticate(r, start)
		if err != nil {
			plainError(w, err)
		} else {
			writeJSON(w, http.StatusOK, s.controllerConfig())
		}
		s.stats.record("GET sluice/config", id.User, time.Since(start))
	})
}

func (s *Server) controllerConfig() ControllerConfig {
	c := ControllerConfig{
		LastUpdate: s.started, BootTime: s.started,
		AccountingStorageType: "accounting_storage/none",
		AuthType:              "auth/jwt", // the only way in: tokens, never munge
		ClusterName:           s.cfg.ClusterName,
		MaxArraySize:          s.cfg.Submit.maxArraySize(),
		MaxJobID:              s.cfg.MaxJobID,
		// sprio's model: a job's priority is its QOS's plus an operator's,
		// less nice, the other factors weighing 0; fair share orders queues.
		PriorityType: "priority/multifactor",
		PrivateData:  s.cfg.Auth.privateData(),
		// Sluice's own scheduling core places jobs (gangs, GPU fractions),
		// named as the REST meta names its accounting storage.
		SchedulerType: "sched/sluice",
		SelectType:    "select/sluice",
		SlurmUser:     s.cfg.Auth.SlurmUser,
		SlurmctldHost: s.cfg.Hostname, // what ping reports
		SlurmVersion:  s.specs[openapi.Latest].Release,
	}
	if l := ledgerOf(s.backend); l != nil {
		c.AccountingStorageType = "accounting_storage/sluice"
		if al, ok := l.(accounting.Ledger); ok {
			hl := int64(al.Usage.DecayHalfLife() / time.Second)
			c.PriorityDecayHalfLife = &hl
		}
	}
	return c
}

// privateData lists the site's PrivateData values as Slurm names them, in
// Slurm's order (alphabetical).
func (c AuthConfig) privateData() []string {
	out := []string{}
	for _, v := range []struct {
		on   bool
		name string
	}{{c.PrivateAccounts, "accounts"}, {c.PrivateJobs, "jobs"}, {c.PrivateUsage, "usage"}, {c.PrivateUsers, "users"}} {
		if v.on {
			out = append(out, v.name)
		}
	}
	return out
}
