package client

import (
	"context"
	"time"
)

// ControllerConfig is the server's configuration as `scontrol show config`
// prints it (its /sluice/v1/config; slurmapi.ControllerConfig): only the
// settings the server has, so a field left empty is one to leave out.
type ControllerConfig struct {
	LastUpdate            time.Time `json:"last_update"`
	BootTime              time.Time `json:"boot_time"`
	AccountingStorageType string    `json:"accounting_storage_type"`
	AuthType              string    `json:"auth_type"`
	ClusterName           string    `json:"cluster_name"`
	MaxArraySize          int       `json:"max_array_size"`
	MaxJobID              uint32    `json:"max_job_id"`
	// PriorityDecayHalfLife is in seconds; nil when the server has no ledger.
	PriorityDecayHalfLife *int64   `json:"priority_decay_half_life"`
	PriorityType          string   `json:"priority_type"`
	PrivateData           []string `json:"private_data"`
	SchedulerType         string   `json:"scheduler_type"`
	SelectType            string   `json:"select_type"`
	SlurmUser             string   `json:"slurm_user"`
	SlurmctldHost         string   `json:"slurmctld_host"`
	SlurmVersion          string   `json:"slurm_version"`
}

// ControllerConfig reads the server's configuration.
func (c *Client) ControllerConfig(ctx context.Context) (ControllerConfig, error) {
	var out ControllerConfig
	err := c.do(ctx, "GET", "/sluice/v1/config", nil, nil, &out)
	return out, err
}
