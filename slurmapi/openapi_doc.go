package slurmapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/openapi"
)

// openAPIDocument merges the official documents of every served version
// into one, keeping only the operations this server implements, so that
// /openapi/v3 describes this server rather than slurmrestd. Schema names
// carry their version ("v0.0.45_job_info"), so they merge without clashes.
func (s *Server) openAPIDocument() ([]byte, error) {
	implemented := map[string]bool{}
	for _, rt := range routes {
		implemented[strings.ToLower(rt.method)+" "+rt.plugin+rt.path] = true
	}
	paths := map[string]any{}
	schemas := map[string]any{}
	var security, securitySchemes any
	for _, v := range openapi.Versions {
		raw, err := openapi.SpecJSON(v)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Paths      map[string]map[string]json.RawMessage `json:"paths"`
			Security   json.RawMessage                       `json:"security"`
			Components struct {
				Schemas         map[string]json.RawMessage `json:"schemas"`
				SecuritySchemes json.RawMessage            `json:"securitySchemes"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("read %s document: %w", v, err)
		}
		for path, item := range doc.Paths {
			key, ok := openapi.RouteKey(path, v)
			if !ok {
				continue
			}
			kept := map[string]json.RawMessage{}
			for method, op := range item {
				if method == "parameters" || implemented[method+" "+key] {
					kept[method] = op
				}
			}
			if len(kept) > 1 || (len(kept) == 1 && kept["parameters"] == nil) {
				paths[path] = kept
			}
		}
		for name, schema := range doc.Components.Schemas {
			schemas[name] = schema
		}
		security, securitySchemes = doc.Security, doc.Components.SecuritySchemes
	}
	return json.Marshal(map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "Sluice slurmrestd-compatible API",
			"description": "The slurmrestd endpoints Sluice implements, for data_parser v0.0.41 to v0.0.45.",
			"version":     "sluice",
		},
		"servers":    []any{map[string]any{"url": "/"}},
		"security":   security,
		"paths":      paths,
		"components": map[string]any{"schemas": schemas, "securitySchemes": securitySchemes},
	})
}
