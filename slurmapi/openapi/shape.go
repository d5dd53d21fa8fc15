package openapi

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind is the JSON type a Shape accepts.
type Kind uint8

// The kinds a schema node can have. NoValue is Slurm's
// {"set","infinite","number"} struct, recognised so that a plain number can
// be wrapped into it and a struct unwrapped where a version wants a number.
const (
	Any Kind = iota
	Object
	Array
	String
	Integer
	Number
	Bool
	NoValue
)

// Shape is the part of a JSON schema needed to convert a rendered value to
// one version: which properties exist, their kinds, and enum values.
type Shape struct {
	Kind  Kind
	Props map[string]*Shape
	Items *Shape
	Enum  map[string]bool
	// Required lists the properties an object must carry; Empty fills
	// them so that error responses still validate.
	Required []string
}

type rawSchema struct {
	Ref        string                `json:"$ref"`
	Type       string                `json:"type"`
	Properties map[string]*rawSchema `json:"properties"`
	Items      *rawSchema            `json:"items"`
	Enum       []string              `json:"enum"`
	Required   []string              `json:"required"`
}

type rawMedia struct {
	Schema *rawSchema `json:"schema"`
}

type rawOperation struct {
	RequestBody *struct {
		Content map[string]rawMedia `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]rawMedia `json:"content"`
	} `json:"responses"`
}

type rawDoc struct {
	Info struct {
		Version string `json:"version"`
	} `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*rawSchema `json:"schemas"`
	} `json:"components"`
}

// Spec is one version's document compiled into shapes, keyed by the path
// below the version prefix ("/job/submit", "/jobs/") and the lower-case
// method. It is immutable after Compile and safe for concurrent use.
type Spec struct {
	Version string
	// Release is the Slurm release the document was written from
	// ("26.05.2"), reported in every response's meta.
	Release string
	// Responses maps "method path" (path relative to /slurm/VERSION or
	// /slurmdb/VERSION, with the plugin in front and no trailing slash:
	// "get slurm/ping") to the shape of the operation's 200 response.
	Responses map[string]*Shape
}

// Compile parses one version's embedded document into shapes.
func Compile(version string) (*Spec, error) {
	b, err := SpecJSON(version)
	if err != nil {
		return nil, err
	}
	var doc rawDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse %s: %w", version, err)
	}
	c := compiler{schemas: doc.Components.Schemas, done: map[string]*Shape{}}
	spec := &Spec{Version: version, Release: release(doc.Info.Version), Responses: map[string]*Shape{}}
	for path, item := range doc.Paths {
		key, ok := RouteKey(path, version)
		if !ok {
			continue
		}
		for method, rawOp := range item {
			if method == "parameters" {
				continue
			}
			var op rawOperation
			if err := json.Unmarshal(rawOp, &op); err != nil {
				return nil, fmt.Errorf("%s %s %s: %w", version, method, path, err)
			}
			resp, ok := op.Responses["200"]
			if !ok {
				continue
			}
			media, ok := resp.Content["application/json"]
			if !ok || media.Schema == nil {
				continue
			}
			spec.Responses[method+" "+key] = c.shape(media.Schema)
		}
	}
	return spec, nil
}

// RouteKey turns "/slurm/v0.0.45/ping/" into "slurm/ping"; trailing
// slashes do not matter to the server, so keys have none.
func RouteKey(path, version string) (string, bool) {
	for _, plugin := range []string{"slurm", "slurmdb"} {
		prefix := "/" + plugin + "/" + version
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			return plugin + strings.TrimSuffix(rest, "/"), true
		}
	}
	return "", false
}

// Response returns the 200 response shape of an operation, or nil when
// this version does not have it.
func (s *Spec) Response(method, key string) *Shape {
	return s.Responses[strings.ToLower(method)+" "+key]
}

type compiler struct {
	schemas map[string]*rawSchema
	done    map[string]*Shape
}

func (c *compiler) shape(r *rawSchema) *Shape {
	if r.Ref != "" {
		name := r.Ref[strings.LastIndexByte(r.Ref, '/')+1:]
		if s, ok := c.done[name]; ok {
			return s
		}
		s := &Shape{}
		// Registered before filling so that recursive schemas terminate.
		c.done[name] = s
		if target, ok := c.schemas[name]; ok {
			*s = *c.shape(target)
		}
		return s
	}
	s := &Shape{}
	switch r.Type {
	case "object":
		s.Kind = Object
		if isNoValue(r) {
			s.Kind = NoValue
		}
		s.Required = r.Required
		s.Props = make(map[string]*Shape, len(r.Properties))
		for name, p := range r.Properties {
			s.Props[name] = c.shape(p)
		}
	case "array":
		s.Kind = Array
		if r.Items != nil {
			s.Items = c.shape(r.Items)
		} else {
			s.Items = &Shape{}
		}
	case "string":
		s.Kind = String
		if len(r.Enum) > 0 {
			s.Enum = make(map[string]bool, len(r.Enum))
			for _, e := range r.Enum {
				s.Enum[e] = true
			}
		}
	case "integer":
		s.Kind = Integer
	case "number":
		s.Kind = Number
	case "boolean":
		s.Kind = Bool
	}
	return s
}

func isNoValue(r *rawSchema) bool {
	if len(r.Properties) != 3 {
		return false
	}
	_, set := r.Properties["set"]
	_, inf := r.Properties["infinite"]
	_, num := r.Properties["number"]
	return set && inf && num
}

// release reads "Slurm-26.05.2&openapi/slurmdbd&..." as "26.05.2".
func release(info string) string {
	r, _, _ := strings.Cut(strings.TrimPrefix(info, "Slurm-"), "&")
	return r
}
