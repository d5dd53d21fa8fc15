package main

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/remediation/controller"
)

// addComponents wires every part of Sluice into the server. Each part owns
// its logic; this file only maps configuration onto constructors.
func (s *Server) addComponents() error {
	if s.cfg.Remediation.Enabled {
		s.addRemediation()
	}
	return nil
}

func (s *Server) addRemediation() {
	r := s.cfg.Remediation
	cfg := controller.Config{
		BreakerShare:  r.BreakerShare,
		BreakerWindow: time.Duration(r.BreakerWindow),
		DrainTimeout:  time.Duration(r.DrainTimeout),
		Validation: controller.Validation{
			Image:     r.ValidationImage,
			Namespace: r.ValidationNamespace,
			Timeout:   time.Duration(r.ValidationTimeout),
		},
	}
	s.addComponent(component{name: "remediation", leaderOnly: true, run: func(ctx context.Context) error {
		return controller.Run(ctx, cfg, s.restConfig)
	}})
}
