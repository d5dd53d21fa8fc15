package slurmapi

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/openapi"
)

var update = flag.Bool("update", false, "rewrite the generated tables in docs/rest-compatibility.md")

const compatDoc = "../docs/rest-compatibility.md"

// TestCompatDocMatchesCode: the tables in docs/rest-compatibility.md are
// the code's own (JobDescFields, sbatch's option tables); -update
// rewrites them.
func TestCompatDocMatchesCode(t *testing.T) {
	raw, err := os.ReadFile(compatDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok1 := strings.Cut(doc, CompatDocBegin+"\n")
	current, after, ok2 := strings.Cut(rest, CompatDocEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers %q ... %q", compatDoc, CompatDocBegin, CompatDocEnd)
	}
	want := CompatibilityMarkdown()
	if current == want {
		return
	}
	if *update {
		if err := os.WriteFile(compatDoc, []byte(before+CompatDocBegin+"\n"+want+CompatDocEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's generated tables differ from the code; run go test ./slurmapi -run CompatDoc -update", compatDoc)
}

// TestJobDescFieldsCoverTheSpecs: every field of job_desc_msg in every
// served version has one rule, and every rule but Sluice's own
// container_image names a field of some version.
func TestJobDescFieldsCoverTheSpecs(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range JobDescFields {
		if seen[f.Name] {
			t.Errorf("field %s has two rules", f.Name)
		}
		seen[f.Name] = true
		if f.Support == Refused && shortText[f.Errno] == "" {
			t.Errorf("field %s is refused with error %d, which has no short text", f.Name, f.Errno)
		}
		if f.Support != Honoured && f.Note == "" {
			t.Errorf("field %s is %s without saying why", f.Name, f.Support)
		}
	}
	inSpec := map[string]bool{"container_image": true}
	for _, v := range openapi.Versions {
		raw, err := openapi.SpecJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for name := range doc.Components.Schemas[v+"_job_desc_msg"].Properties {
			inSpec[name] = true
			if !seen[name] {
				t.Errorf("%s job_desc_msg field %s has no rule in JobDescFields", v, name)
			}
		}
	}
	for name := range seen {
		if !inSpec[name] {
			t.Errorf("JobDescFields has a rule for %s, which no served version has", name)
		}
	}
}
