package slurmapi

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// minKeyBytes is the shortest HS256 key accepted; slurm's jwt_hs256.key
// is commonly 32 random bytes or more.
const minKeyBytes = 32

// LoadOrCreateKey reads the HS256 signing key at path. If the file does
// not exist it creates one with 32 random bytes, mode 0600, so a fresh
// server and `sluice token` agree without setup. A key shorter than 32
// bytes is refused rather than silently weak.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read JWT key: %w", err)
	}
	if len(key) < minKeyBytes {
		return nil, fmt.Errorf("JWT key %s has %d bytes, need at least %d", path, len(key), minKeyBytes)
	}
	return key, nil
}

func createKey(path string) ([]byte, error) {
	key := make([]byte, minKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create JWT key directory: %w", err)
	}
	// O_EXCL: if another process created the key meanwhile, use theirs.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadOrCreateKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create JWT key: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("write JWT key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write JWT key: %w", err)
	}
	return key, nil
}
