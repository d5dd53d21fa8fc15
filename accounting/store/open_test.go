package store

import "testing"

func TestSharedOnlyForPostgreSQL(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://sluice@db/ledger":   true,
		"postgresql://sluice@db/ledger": true,
		"/var/lib/sluice/ledger.db":     false,
		"sqlite:///var/lib/ledger.db":   false,
		"mysql://db/ledger":             false,
		"":                              false,
	} {
		if got := Shared(dsn); got != want {
			t.Errorf("Shared(%q) = %v, want %v", dsn, got, want)
		}
	}
}
