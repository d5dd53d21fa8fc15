// Package openapi holds the official slurmrestd OpenAPI documents for the
// data_parser versions Sluice serves (v0.0.41 to v0.0.45) and turns them,
// once at start-up, into compact response shapes used to render one
// internal model as each version's JSON.
//
// The spec files under specs/ are the contract, copied verbatim from
// slurmrestd; they are embedded so that the server and its tests need
// nothing outside the module.
package openapi

import (
	"embed"
	"fmt"
)

//go:embed specs/*.json
var specFiles embed.FS

// Versions lists the data_parser versions served, oldest first.
var Versions = []string{"v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"}

// Latest is the newest version; the internal model is rendered in its
// shape and converted down for older versions.
const Latest = "v0.0.45"

// SpecJSON returns the official document of one version.
func SpecJSON(version string) ([]byte, error) {
	b, err := specFiles.ReadFile("specs/" + version + ".json")
	if err != nil {
		return nil, fmt.Errorf("no OpenAPI document for %q", version)
	}
	return b, nil
}
