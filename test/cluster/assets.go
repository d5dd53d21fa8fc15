package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AssetsEnv names the environment variable that points at the directory
// holding the rig's binaries, when Options.Assets is empty.
const AssetsEnv = "SLUICE_ASSETS"

// ErrAssetsMissing is wrapped by Start's error when binaries are not there.
var ErrAssetsMissing = errors.New("rig binaries missing")

// binaries the rig runs, all expected in the assets directory.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// resolveAssets picks the binaries directory: the explicit one, then
// $SLUICE_ASSETS, then bin/ at the root of the repository containing the
// working directory. It checks every binary is there and executable.
func resolveAssets(explicit string) (string, error) {
	dir := explicit
	if dir == "" {
		dir = os.Getenv(AssetsEnv)
	}
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", fmt.Errorf("%w: %v; run `make tools` in the repository, or set %s to a directory holding %s",
				ErrAssetsMissing, err, AssetsEnv, strings.Join(binaries, ", "))
		}
		dir = filepath.Join(root, "bin")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var missing []string
	for _, b := range binaries {
		info, err := os.Stat(filepath.Join(dir, b))
		if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w from %s: %s; run `make tools` to build them (or point %s at a directory that has them)",
			ErrAssetsMissing, dir, strings.Join(missing, ", "), AssetsEnv)
	}
	return dir, nil
}

// repoRoot walks up from the working directory to the first directory that has
// both go.mod and .git: the repository root, where `make tools` puts bin/.
// go.mod alone is not enough: hack/tools is a module of its own.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if exists(filepath.Join(dir, "go.mod")) && exists(filepath.Join(dir, ".git")) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no repository root (go.mod and .git) above %s", wd)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
