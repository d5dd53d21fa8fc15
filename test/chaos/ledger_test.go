package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the PostgreSQL sub-case
	_ "modernc.org/sqlite"             // the "sqlite" driver, to lock the ledger file
)

// ledgerOutage is how long the ledger is away: longer than the SQLite
// busy timeout (10 s, accounting/store), so writes fail rather than wait.
func ledgerOutage(sc scale) time.Duration { return max(sc.outage, 15*time.Second) }

// TestLedgerDatabaseAway: the ledger cannot be written for a while under
// load. With SQLite another process holds the file's write lock; with
// PostgreSQL (SLUICE_TEST_POSTGRES_DSN, as hack/test-deps.sh sets it) every
// connection of the ledger's database is cut and new ones are refused, which
// is what a restart of PostgreSQL looks like to Sluice. Scheduling goes on;
// afterwards the ledger holds every job exactly once, usage counted once.
func TestLedgerDatabaseAway(t *testing.T) {
	t.Run("sqlite-locked", func(t *testing.T) {
		f := begin(t, 1, "")
		db, err := sql.Open("sqlite", "file:"+f.site.ledger+"?_pragma=busy_timeout(60000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		at := time.Now()
		if _, err := conn.ExecContext(f.ctx, "BEGIN EXCLUSIVE"); err != nil {
			t.Fatalf("lock the ledger: %v", err)
		}
		time.Sleep(ledgerOutage(f.sc))
		if _, err := conn.ExecContext(f.ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		f.end("ledger locked (SQLite)", at, time.Since(at))
	})
	t.Run("postgres-restarted", func(t *testing.T) {
		admin := os.Getenv("SLUICE_TEST_POSTGRES_DSN")
		if admin == "" {
			if os.Getenv("SLUICE_REQUIRE_POSTGRES") == "1" {
				t.Fatal("SLUICE_REQUIRE_POSTGRES=1 but SLUICE_TEST_POSTGRES_DSN is unset")
			}
			t.Skip("no PostgreSQL configured: SLUICE_TEST_POSTGRES_DSN is unset (source hack/test-deps.sh to run this)")
		}
		dsn, cut := privateDatabase(t, admin)
		f := begin(t, 1, dsn)
		at := time.Now()
		cut(true)
		time.Sleep(ledgerOutage(f.sc))
		cut(false)
		f.end("ledger down (PostgreSQL)", at, time.Since(at))
	})
}

// privateDatabase creates a database of the test's own on admin's server
// and returns its DSN and a switch that cuts it off (every connection
// terminated, new ones refused) or lets connections in again.
func privateDatabase(t *testing.T, admin string) (string, func(off bool)) {
	t.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("sluice_chaos_%d", os.Getpid())
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		t.Fatalf("create database %s: %v", name, err)
	}
	cut := func(off bool) {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", name, !off)); err != nil {
			t.Fatal(err)
		}
		if off {
			if _, err := db.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		cut(true) // the servers have stopped by now; nothing else may hold it
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		db.Close()
	})
	u.Path = "/" + name
	return strings.Replace(u.String(), "postgresql://", "postgres://", 1), cut
}
