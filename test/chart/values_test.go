package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestValuesDocumentedAndInSchema: every field of values.yaml has its own
// comment, and values.yaml and values.schema.json name the same fields, so
// no value is undocumented, unchecked, or checked but unknown to users.
// Maps the schema leaves open (labels, resources, nodeSelector...) are user
// data: their keys are not fields.
func TestValuesDocumentedAndInSchema(t *testing.T) {
	var doc yaml.Node
	data, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	data, err = os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	problems := checkValues(doc.Content[0], schema, "")
	for _, p := range problems {
		t.Error(p)
	}
}

// Schema properties values.yaml need not carry: Helm passes `global` to
// subcharts.
var schemaOnly = []string{"global"}

func checkValues(node *yaml.Node, schema map[string]any, path string) []string {
	props, _ := schema["properties"].(map[string]any)
	if props == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	var problems []string
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, val := node.Content[i], node.Content[i+1]
		field := join(path, key.Value)
		seen[key.Value] = true
		if key.HeadComment == "" && key.LineComment == "" {
			problems = append(problems, fmt.Sprintf("values.yaml line %d: %s has no comment", key.Line, field))
		}
		sub, ok := props[key.Value].(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("values.yaml line %d: %s is not in values.schema.json", key.Line, field))
			continue
		}
		problems = append(problems, checkValues(val, sub, field)...)
	}
	for name := range props {
		if !seen[name] && !(path == "" && slices.Contains(schemaOnly, name)) {
			problems = append(problems, fmt.Sprintf("values.schema.json declares %s, which values.yaml lacks", join(path, name)))
		}
	}
	return problems
}

// join is the dotted path of a field, as users write it in --set.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
