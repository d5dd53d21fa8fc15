// Package openapitest checks HTTP responses against the official
// slurmrestd document of their version with kin-openapi. It is meant for
// tests: every HTTP test in slurmapi runs its responses through Check.
//
// Validation is stricter than the documents themselves: every object schema
// is closed (additionalProperties: false), so a field that exists only in a
// newer version fails the check for an older one. Required names with a
// '/' are dropped (see slashFree).
package openapitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sluicehq/sluice/slurmapi/openapi"
)

var (
	docsMu sync.Mutex
	docs   = map[string]*openapi3.T{}
)

// Doc loads (once per test binary) the closed document of one version.
func Doc(version string) (*openapi3.T, error) {
	docsMu.Lock()
	defer docsMu.Unlock()
	if d, ok := docs[version]; ok {
		return d, nil
	}
	raw, err := openapi.SpecJSON(version)
	if err != nil {
		return nil, err
	}
	d, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", version, err)
	}
	if err := d.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("document %s invalid: %w", version, err)
	}
	closed := false
	for _, s := range d.Components.Schemas {
		closeInline(s.Value, &closed, map[*openapi3.Schema]bool{})
	}
	docs[version] = d
	return d, nil
}

// slashFree drops required names such as "error/string": the official
// documents list nested paths as required properties of the parent, which
// no JSON object can satisfy together with the nested form they describe.
func slashFree(required []string) []string {
	out := required[:0:0]
	for _, r := range required {
		if !strings.Contains(r, "/") {
			out = append(out, r)
		}
	}
	return out
}

// closeInline closes inline object schemas nested in properties and items.
func closeInline(s *openapi3.Schema, closed *bool, seen map[*openapi3.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if s.Type.Is("object") && len(s.Properties) > 0 {
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: closed}
	}
	s.Required = slashFree(s.Required)
	for _, p := range s.Properties {
		if p.Ref == "" {
			closeInline(p.Value, closed, seen)
		}
	}
	if s.Items != nil && s.Items.Ref == "" {
		closeInline(s.Items.Value, closed, seen)
	}
}

// Validate checks one response body against the document of the version
// named in the request path ("/slurm/v0.0.44/jobs/"). A status without its
// own entry is checked against the operation's "default" response.
func Validate(method, path string, status int, body []byte) error {
	version, ok := versionOf(path)
	if !ok {
		return fmt.Errorf("%s: no data_parser version in path", path)
	}
	d, err := Doc(version)
	if err != nil {
		return err
	}
	item := findPath(d, path)
	if item == nil {
		return fmt.Errorf("%s %s: path not in %s", method, path, version)
	}
	op := item.GetOperation(strings.ToUpper(method))
	if op == nil {
		return fmt.Errorf("%s %s: method not in %s", method, path, version)
	}
	resp := op.Responses.Status(status)
	if resp == nil {
		resp = op.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("%s %s: no response %d in %s", method, path, status, version)
	}
	media := resp.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return fmt.Errorf("%s %s: response %d has no JSON schema", method, path, status)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s %s: body is not JSON: %w (%q)", method, path, err, body)
	}
	if err := media.Schema.Value.VisitJSON(v, openapi3.MultiErrors(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("%s %s %d against %s: %w\nbody: %s", method, path, status, version, err, body)
	}
	return nil
}

// Check is Validate for tests; it fails the test on a mismatch.
func Check(t testing.TB, method, path string, status int, body []byte) {
	t.Helper()
	if err := Validate(method, path, status, body); err != nil {
		t.Error(err)
	}
}

// CheckResponse validates a recorded response of a request to path.
func CheckResponse(t testing.TB, req *http.Request, status int, body []byte) {
	t.Helper()
	Check(t, req.Method, req.URL.Path, status, body)
}

func versionOf(path string) (string, bool) {
	for _, v := range openapi.Versions {
		if strings.Contains(path, "/"+v+"/") || strings.HasSuffix(path, "/"+v) {
			return v, true
		}
	}
	return "", false
}

// findPath matches a concrete path to a templated one; trailing slashes
// are ignored as the server ignores them.
func findPath(d *openapi3.T, path string) *openapi3.PathItem {
	// The template with the most literal segments wins, so "job/submit"
	// never matches "job/{job_id}"; ties break by name for determinism.
	want := strings.Split(strings.Trim(path, "/"), "/")
	var best *openapi3.PathItem
	bestScore, bestTmpl := -1, ""
	for tmpl, item := range d.Paths.Map() {
		got := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(got) != len(want) {
			continue
		}
		score := 0
		for i := range got {
			if got[i] == want[i] {
				score++
			} else if !strings.HasPrefix(got[i], "{") {
				score = -1
				break
			}
		}
		if score > bestScore || (score == bestScore && score >= 0 && tmpl < bestTmpl) {
			best, bestScore, bestTmpl = item, score, tmpl
		}
	}
	if bestScore < 0 {
		return nil
	}
	return best
}
