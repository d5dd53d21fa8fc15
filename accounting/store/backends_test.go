package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// forEachBackend runs the same test against SQLite (a temp file) and
// PostgreSQL (SLUICE_TEST_POSTGRES_DSN, in a schema of its own that is dropped
// afterwards). Without that variable the PostgreSQL half is skipped, unless
// SLUICE_REQUIRE_POSTGRES=1 makes it a failure.
func forEachBackend(t *testing.T, test func(t *testing.T, s *SQLStore)) {
	forEachDSN(t, func(t *testing.T, dsn string) { test(t, openDSN(t, dsn)) })
}

// forEachDSN is forEachBackend for tests that open the ledger themselves,
// such as a restart.
func forEachDSN(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, filepath.Join(t.TempDir(), "ledger.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, postgresDSN(t))
	})
}

func openDSN(t testing.TB, dsn string) *SQLStore {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openSQLite(t testing.TB) *SQLStore {
	return openDSN(t, filepath.Join(t.TempDir(), "ledger.db"))
}

func openPostgres(t testing.TB) *SQLStore {
	return openDSN(t, postgresDSN(t))
}

// postgresDSN makes a schema of its own for one test and returns a DSN
// that uses it.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("SLUICE_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("SLUICE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("SLUICE_REQUIRE_POSTGRES=1 but SLUICE_TEST_POSTGRES_DSN is unset")
		}
		t.Skip("PostgreSQL store tests skipped: set SLUICE_TEST_POSTGRES_DSN=postgres://user:pass@host/db to run them")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	schema := fmt.Sprintf("t_%d", time.Now().UnixNano())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop test schema: %v", err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
