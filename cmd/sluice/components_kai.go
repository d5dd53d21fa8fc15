package main

import (
	"fmt"
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

// schedulerNames is what KAI mode adds to have: kai-scheduler, unless already there.
func (k KAIConfig) schedulerNames(have []string) []string {
	if !k.Enabled || slices.Contains(have, kai.SchedulerName) {
		return nil
	}
	return []string{kai.SchedulerName}
}

// addKAI runs the mirror of KAI's Queues and PodGroups on the leader; its PodGroups are
// jobs with ids from the Slurm API's counter (addREST ran first).
func (s *Server) addKAI() error {
	mirror, err := kai.NewMirror(s.restConfig, s.jobIDs.Next, s.log.With("component", "kai"))
	if err != nil {
		return fmt.Errorf("KAI mirror: %w", err)
	}
	s.addComponent(component{name: "kai-mirror", leaderOnly: true, run: mirror.Run})
	return nil
}
