package store

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/accounting"
)

// A ledger written before manifest workloads were named "ns:<namespace>" has
// their rows under the bare namespace; the upgrade renames them and leaves a
// Slurm user who happens to share the name alone.
func TestManifestRowsTakeTheNamespacePrincipalOnUpgrade(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		manifest := sampleJob(1)
		manifest.Origin, manifest.Namespace, manifest.User = accounting.OriginKubernetes, "vision", "vision"
		slurm := sampleJob(2)
		slurm.Namespace, slurm.User = "vision", "vision" // a Slurm user named like the namespace
		for _, j := range []accounting.Job{manifest, slurm} {
			if err := s.UpsertJob(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = 4`); err != nil {
			t.Fatal(err)
		}
		if err := s.migrate(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := s.Jobs(ctx, accounting.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		users := map[int64]string{}
		for _, j := range got {
			users[j.JobID] = j.User
		}
		if users[1] != "ns:vision" || users[2] != "vision" {
			t.Fatalf("users after the upgrade: %v, want job 1 ns:vision (manifest) and job 2 vision (Slurm)", users)
		}
	})
}
