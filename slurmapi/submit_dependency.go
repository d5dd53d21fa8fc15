package slurmapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// dependenciesExist refuses a dependency that names a job the cluster does not know, as
// slurmctld does ("Job dependency problem"): such a job would otherwise pend for good
// with nothing to say why. Each job is looked up once; MaxDependencyChars keeps the list
// to a few hundred ids. source is the field the dependency came in.
func (s *Server) dependenciesExist(ctx context.Context, source, dependency string) error {
	if dependency == "" {
		return nil
	}
	deps, err := sbatch.ParseDependency(dependency)
	if err != nil {
		return BadRequest(ErrDependency, source, "%v", err)
	}
	seen := map[uint32]bool{}
	for _, d := range deps.List {
		for _, id := range d.Jobs {
			if seen[id] {
				continue
			}
			seen[id] = true
			_, err := s.backend.Job(ctx, id)
			var e *Error
			switch {
			case errors.As(err, &e) && e.Status == http.StatusNotFound:
				return BadRequest(ErrDependency, source, "dependency %s names job %d, which does not exist", dependency, id)
			case err != nil:
				return err
			}
		}
	}
	return nil
}
