package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// scontrolShowConfig prints the server's configuration as `scontrol show
// config` does: the settings, then a blank line and the controllers' state,
// which scontrol prints after them (as `scontrol ping`).
func scontrolShowConfig(ctx context.Context, c *client.Client, w io.Writer, o showOptions) error {
	cfg, err := c.ControllerConfig(ctx)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cfg)
	}
	writeConfig(w, cfg, time.Local)
	fmt.Fprintln(w)
	return scontrolPing(ctx, c, w)
}

// writeConfig prints "Configuration data as of TIME" and one "Key = value"
// line per setting, the key padded to 23 as slurm_print_key_pairs does; times
// in zone, as slurm_make_time_str prints them.
func writeConfig(w io.Writer, cfg client.ControllerConfig, zone *time.Location) {
	fmt.Fprintf(w, "Configuration data as of %s\n", cfg.LastUpdate.In(zone).Format(slurmTimeLayout))
	for _, kv := range configPairs(cfg, zone) {
		fmt.Fprintf(w, "%-23s = %s\n", kv[0], kv[1])
	}
}

// slurmTimeLayout is slurm_make_time_str's default form (%FT%T).
const slurmTimeLayout = "2006-01-02T15:04:05"

// configPairs are the settings in the order slurmctld lists them
// (slurm_ctl_conf_2_key_pairs), each only where the server gave a value:
// Sluice has no counterpart for most of Slurm's, and a made-up one would
// mislead whoever greps for it.
func configPairs(cfg client.ControllerConfig, zone *time.Location) [][2]string {
	var out [][2]string
	add := func(key, value string) {
		if value != "" {
			out = append(out, [2]string{key, value})
		}
	}
	add("AccountingStorageType", cfg.AccountingStorageType)
	add("AuthType", cfg.AuthType)
	if !cfg.BootTime.IsZero() {
		add("BOOT_TIME", cfg.BootTime.In(zone).Format(slurmTimeLayout))
	}
	add("ClusterName", cfg.ClusterName)
	if cfg.MaxArraySize > 0 {
		add("MaxArraySize", strconv.Itoa(cfg.MaxArraySize))
	}
	if cfg.MaxJobID > 0 {
		add("MaxJobId", strconv.FormatUint(uint64(cfg.MaxJobID), 10))
	}
	if hl := cfg.PriorityDecayHalfLife; hl != nil {
		add("PriorityDecayHalfLife", sbatch.FormatTimeLimit(time.Duration(*hl)*time.Second)) // Slurm's secs2time_str form
	}
	add("PriorityType", cfg.PriorityType)
	private := "none" // Slurm's word for no PrivateData
	if len(cfg.PrivateData) > 0 {
		private = strings.Join(cfg.PrivateData, ",")
	}
	add("PrivateData", private)
	add("SchedulerType", cfg.SchedulerType)
	add("SelectType", cfg.SelectType)
	// Slurm writes name(uid); the REST API knows users by name only.
	add("SlurmUser", cfg.SlurmUser)
	add("SlurmctldHost[0]", cfg.SlurmctldHost)
	add("SLURM_VERSION", cfg.SlurmVersion)
	return out
}
