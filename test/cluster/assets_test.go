package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveAssets(t *testing.T) {
	full := t.TempDir()
	for _, b := range binaries {
		if err := os.WriteFile(filepath.Join(full, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	partial := t.TempDir()
	for _, b := range binaries[:2] {
		if err := os.WriteFile(filepath.Join(partial, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(partial, "kwok"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		explicit string
		env      string
		want     string
		wantErr  []string
	}{
		{name: "explicit directory", explicit: full, env: partial, want: full},
		{name: "environment variable", env: full, want: full},
		{name: "missing and non-executable binaries named", explicit: partial,
			wantErr: []string{"make tools", "kube-controller-manager", "kube-scheduler", "kwok", partial}},
		{name: "empty directory", explicit: t.TempDir(), wantErr: []string{"make tools", "etcd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(AssetsEnv, tt.env)
			got, err := resolveAssets(tt.explicit)
			if len(tt.wantErr) == 0 {
				if err != nil || got != tt.want {
					t.Fatalf("resolveAssets = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrAssetsMissing) {
				t.Fatalf("err = %v, want ErrAssetsMissing", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), ": etcd,") && tt.explicit == partial {
				t.Errorf("error lists etcd, which is present: %v", err)
			}
		})
	}
}

func TestStartWithoutBinariesStartsNothing(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Options{Dir: dir, Assets: t.TempDir()})
	if !errors.Is(err, ErrAssetsMissing) || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("Start = %v, want ErrAssetsMissing naming make tools", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Start wrote %d entries into the state dir before failing", len(entries))
	}
}

func TestStartRejectsInvalidSpec(t *testing.T) {
	_, err := Start(context.Background(), Options{Spec: Spec{NodePools: []NodePool{{Name: "a", Count: 0}}}, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "count: must be at least 1") {
		t.Fatalf("Start = %v, want the spec's validation error", err)
	}
}
