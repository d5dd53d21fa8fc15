package openapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/openapi"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
)

// pingTree is a ping response in the union of all versions' fields.
func pingTree() map[string]any {
	return map[string]any{
		"pings": []any{map[string]any{
			"hostname": "sluice", "pinged": "UP", "responding": true,
			"latency": 10, "mode": "primary", "primary": true, "status": "UP",
		}},
		"meta":     map[string]any{"plugin": map[string]any{"name": "sluice"}, "future_field": "x"},
		"errors":   []any{},
		"warnings": []any{},
	}
}

func sharesTree() map[string]any {
	return map[string]any{
		"shares": map[string]any{"shares": []any{map[string]any{
			"id": 1, "name": "nlp", "cluster": "sluice", "partition": "",
			// A no-value struct where v0.0.41 wants a plain double,
			"effective_usage": map[string]any{"set": true, "infinite": false, "number": 0.25},
			// and plain numbers where v0.0.42+ want no-value structs.
			"fairshare": map[string]any{"factor": 0.5, "level": 1.5},
		}}, "total_shares": 10},
		"errors": []any{}, "warnings": []any{},
	}
}

func TestConformValidatesInEveryVersion(t *testing.T) {
	cases := []struct {
		name, key, path string
		tree            func() map[string]any
	}{
		{"ping", "slurm/ping", "/slurm/%s/ping/", pingTree},
		{"shares", "slurm/shares", "/slurm/%s/shares", sharesTree},
	}
	for _, version := range openapi.Versions {
		spec, err := openapi.Compile(version)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			shape := spec.Response("GET", tc.key)
			if shape == nil {
				t.Fatalf("%s: no shape for %s", version, tc.key)
			}
			out, ok := shape.Conform(tc.tree())
			if !ok {
				t.Fatalf("%s %s: conform dropped the whole body", version, tc.name)
			}
			body, _ := json.Marshal(out)
			openapitest.Check(t, "GET", fmt.Sprintf(tc.path, version), 200, body)
		}
	}
}

func TestConformConvertsPerVersion(t *testing.T) {
	cases := []struct {
		version string
		check   func(t *testing.T, ping, share map[string]any)
	}{
		{"v0.0.41", func(t *testing.T, ping, share map[string]any) {
			if _, ok := ping["primary"]; ok {
				t.Error("v0.0.41 ping kept 'primary', which that version lacks")
			}
			if ping["mode"] != "primary" {
				t.Errorf("v0.0.41 ping lost 'mode': %v", ping)
			}
			if share["effective_usage"] != 0.25 {
				t.Errorf("effective_usage = %v, want plain 0.25", share["effective_usage"])
			}
		}},
		{"v0.0.45", func(t *testing.T, ping, share map[string]any) {
			if _, ok := ping["mode"]; ok {
				t.Error("v0.0.45 ping kept 'mode', removed in that version")
			}
			f := share["fairshare"].(map[string]any)["factor"]
			want := map[string]any{"set": true, "infinite": false, "number": 0.5}
			if g, _ := json.Marshal(f); string(g) != mustJSON(want) {
				t.Errorf("factor = %s, want no-value struct %s", g, mustJSON(want))
			}
		}},
	}
	for _, tc := range cases {
		spec, err := openapi.Compile(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := spec.Response("get", "slurm/ping").Conform(pingTree())
		s, _ := spec.Response("get", "slurm/shares").Conform(sharesTree())
		ping := p.(map[string]any)["pings"].([]any)[0].(map[string]any)
		share := s.(map[string]any)["shares"].(map[string]any)["shares"].([]any)[0].(map[string]any)
		tc.check(t, ping, share)
	}
}

func TestValidatorRejectsWrongShapes(t *testing.T) {
	cases := []struct{ name, path, body string }{
		{"unknown field", "/slurm/v0.0.41/ping/", `{"pings":[{"primary":true}]}`},
		{"wrong type", "/slurm/v0.0.45/ping/", `{"pings":"up"}`},
		{"missing required", "/slurm/v0.0.45/ping/", `{}`},
		{"not json", "/slurm/v0.0.45/ping/", `<html>`},
		{"unknown path", "/slurm/v0.0.45/nothing", `{}`},
	}
	for _, tc := range cases {
		if err := openapitest.Validate("GET", tc.path, 200, []byte(tc.body)); err == nil {
			t.Errorf("%s: validator accepted %s", tc.name, tc.body)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
