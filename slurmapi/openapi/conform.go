package openapi

// Conform converts a rendered JSON tree (map[string]any, []any, string,
// bool, int, int64, float64) to this shape: properties the version does not
// have are dropped, a plain number becomes a no-value struct where the
// version wants one and a no-value struct becomes a plain number where the
// version wants that, and enum strings unknown to the version are dropped.
// It reports false when the value cannot be expressed at all, so that the
// caller omits it. Maps are rewritten in place to keep rendering cheap.
func (s *Shape) Conform(v any) (any, bool) {
	if s == nil || v == nil {
		return nil, false
	}
	switch s.Kind {
	case Any:
		return v, true
	case Object:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		for k, child := range m {
			out, ok := s.Props[k].Conform(child)
			if !ok {
				delete(m, k)
				continue
			}
			m[k] = out
		}
		return m, true
	case NoValue:
		if n, ok := number(v); ok {
			return map[string]any{"set": true, "infinite": false, "number": n}, true
		}
		m, ok := v.(map[string]any)
		return m, ok
	case Array:
		items, ok := v.([]any)
		if !ok {
			return nil, false
		}
		out := items[:0]
		for _, it := range items {
			if c, ok := s.Items.Conform(it); ok {
				out = append(out, c)
			}
		}
		return out, true
	case String:
		str, ok := v.(string)
		if !ok || (s.Enum != nil && !s.Enum[str]) {
			return nil, false
		}
		return str, true
	case Integer, Number:
		if n, ok := number(v); ok {
			return n, true
		}
		// A no-value struct where this version wants a plain number.
		m, ok := v.(map[string]any)
		if !ok || m["set"] != true || m["infinite"] == true {
			return nil, false
		}
		return number(m["number"])
	case Bool:
		b, ok := v.(bool)
		return b, ok
	}
	return nil, false
}

func number(v any) (any, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint32:
		return int64(n), true
	case uint64:
		return n, true
	case float64:
		return n, true
	}
	return nil, false
}
