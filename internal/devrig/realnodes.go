package devrig

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/test/cluster"
)

// WithRealNodes adds the pool `sluice dev --real-nodes N` asks for: partition real, two
// stand-in GPUs a node (a device plugin with no driver behind it hands them out).
func WithRealNodes(spec cluster.Spec, n int) (cluster.Spec, error) {
	for _, p := range spec.NodePools {
		if p.Name == "real" {
			return spec, fmt.Errorf("--real-nodes adds a pool named real, and the spec has one already")
		}
	}
	spec.NodePools = append(spec.NodePools, cluster.NodePool{
		Name: "real", Count: n, GPUsPerNode: 2, GPUModel: "Rig-GPU", GPUMemoryMiB: 16384, Real: true,
	})
	return spec, spec.Validate()
}

// SharedDir is the real partition's shared filesystem: a directory of the state dir,
// mounted into every job pod at the same path (a hostPath; every real node is this
// machine), as a site mounts /home on login and compute nodes alike.
func SharedDir(stateDir string) string { return filepath.Join(stateDir, "shared") }

// CreateRealPartition applies partition real: the real nodes and the rig's job image for
// jobs that name none; it makes the shared directory RealFilesystem mounts.
func CreateRealPartition(ctx context.Context, cfg *rest.Config, stateDir string) error {
	dir := SharedDir(stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o1777); err != nil { // every user's jobs write here, as to /tmp
		return err
	}
	doc := map[string]any{
		"apiVersion": "scheduling.sluice.dev/v1alpha1", "kind": "Partition",
		"metadata": map[string]any{"name": "real"},
		"spec": map[string]any{
			"nodeSelector": map[string]any{cluster.LabelPartition: "real"},
			"defaultImage": cluster.JobImage, "defaultTime": "1h", "maxTime": "24h",
		},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if _, err := applyYAML(ctx, cfg, data); err != nil {
		return fmt.Errorf("partition real: %w", err)
	}
	fmt.Printf("real nodes: partition real, shared directory %s\n", dir)
	return nil
}

// RealFilesystem is the shared directory as a site filesystem of partition real (a
// hostPath: every real node is this machine), as the site's config declares one.
func RealFilesystem(stateDir string) map[string]any {
	dir := SharedDir(stateDir)
	return map[string]any{"name": "shared", "mountPath": dir, "partitions": []any{"real"},
		"hostPath": map[string]any{"path": dir, "type": "Directory"}}
}
