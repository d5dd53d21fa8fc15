package main

import (
	"fmt"

	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

// addKAI runs the mirror of KAI's Queues and PodGroups on the leader; its PodGroups are
// jobs with ids from the Slurm API's counter (addREST ran first).
func (s *Server) addKAI() error {
	mirror, err := kai.NewMirror(s.restConfig, s.jobIDs.Next)
	if err != nil {
		return fmt.Errorf("KAI mirror: %w", err)
	}
	s.addComponent(component{name: "kai-mirror", leaderOnly: true, run: mirror.Run})
	return nil
}
