package openapi

// Empty returns the smallest value of this shape that validates: an object
// with only its required properties, each itself Empty. Error responses
// start from it, because slurmrestd's documents give errors the same
// schema as success, payload included.
func (s *Shape) Empty() any {
	if s == nil {
		return nil
	}
	switch s.Kind {
	case Object:
		m := make(map[string]any, len(s.Required))
		for _, name := range s.Required {
			if p := s.Props[name]; p != nil {
				m[name] = p.Empty()
			}
		}
		return m
	case NoValue:
		return map[string]any{"set": false, "infinite": false, "number": 0}
	case Array:
		return []any{}
	case String:
		return ""
	case Integer:
		return int64(0)
	case Number:
		return float64(0)
	case Bool:
		return false
	}
	return map[string]any{}
}
