// Package store implements accounting.Store on SQLite (modernc.org/sqlite,
// the embedded default) and PostgreSQL (pgx), selected by a DSN. Both run the
// same SQL, written once with ? placeholders and rebound for PostgreSQL.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver
)

type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

func (d dialect) String() string {
	if d == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// target is a parsed DSN: which driver and what to hand it.
type target struct {
	dialect dialect
	source  string
}

// parseDSN accepts "postgres://..." or "postgresql://..." for PostgreSQL, and
// "sqlite:///abs/path.db", "sqlite://rel/path.db" or a plain file path for
// SQLite.
func parseDSN(dsn string) (target, error) {
	switch {
	case dsn == "":
		return target{}, fmt.Errorf("ledger DSN is empty (want a file path, sqlite:///path/ledger.db or postgres://...)")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			return target{}, fmt.Errorf("ledger DSN: %w", err)
		}
		return target{dialect: dialectPostgres, source: dsn}, nil
	case strings.HasPrefix(dsn, "sqlite://"):
		path := strings.TrimPrefix(dsn, "sqlite://")
		if path == "" {
			return target{}, fmt.Errorf("ledger DSN %q names no file", dsn)
		}
		return sqliteTarget(path), nil
	case strings.Contains(dsn, "://"):
		return target{}, fmt.Errorf("ledger DSN %q: unknown scheme (want sqlite:// or postgres://)", dsn)
	}
	return sqliteTarget(dsn), nil
}

// sqliteTarget turns on WAL (readers never block the recorder), waits for a
// busy database instead of failing, and takes the write lock when a
// transaction begins so two writers never deadlock upgrading their locks.
func sqliteTarget(path string) target {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	return target{dialect: dialectSQLite, source: "file:" + path + "?" + q.Encode()}
}

// Open connects to the ledger named by dsn and applies pending migrations.
func Open(ctx context.Context, dsn string) (*SQLStore, error) {
	t, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	driver := "sqlite"
	if t.dialect == dialectPostgres {
		driver = "pgx"
	}
	db, err := sql.Open(driver, t.source)
	if err != nil {
		return nil, fmt.Errorf("open %s ledger: %w", t.dialect, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s ledger: %w", t.dialect, err)
	}
	s := &SQLStore{db: db, dialect: t.dialect}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
