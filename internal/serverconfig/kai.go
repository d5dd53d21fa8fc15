package serverconfig

import (
	"slices"

	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

// KAIConfig is KAI mode (docs/kai-compatibility.md): Sluice takes the manifests and objects
// written for KAI Scheduler as its own.
type KAIConfig struct {
	// Enabled takes pods with schedulerName kai-scheduler (the webhook gives them Sluice's
	// name) and mirrors KAI's Queues and PodGroups into Sluice's (on the leader). It needs
	// the webhook. KAI's own scheduler must not run beside it.
	Enabled bool `yaml:"enabled"`
}

// SchedulerNames is what KAI mode adds to have: kai-scheduler, unless already there.
func (k KAIConfig) SchedulerNames(have []string) []string {
	if !k.Enabled || slices.Contains(have, kai.SchedulerName) {
		return nil
	}
	return []string{kai.SchedulerName}
}
