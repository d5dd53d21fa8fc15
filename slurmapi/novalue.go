package slurmapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// NoVal is Slurm's optional number: {"set":true,"infinite":false,"number":N}.
// On input it also accepts what slurmrestd's parser accepts: a plain number,
// null, or the strings "INFINITE"/"UNLIMITED" and numeric strings.
type NoVal struct {
	Set      bool
	Infinite bool
	Number   int64
}

// Num is a set NoVal.
func Num(n int64) NoVal { return NoVal{Set: true, Number: n} }

// Infinite is an infinite NoVal.
func Infinite() NoVal { return NoVal{Set: true, Infinite: true} }

// Value returns the number and whether it is set and finite.
func (n NoVal) Value() (int64, bool) { return n.Number, n.Set && !n.Infinite }

// tree renders the struct form; older versions that want a plain number
// get it from the shape conversion.
func (n NoVal) tree() map[string]any {
	return map[string]any{"set": n.Set, "infinite": n.Infinite, "number": n.Number}
}

// MarshalJSON writes the struct form, as Slurm does.
func (n NoVal) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"set":%t,"infinite":%t,"number":%d}`, n.Set, n.Infinite, n.Number), nil
}

// UnmarshalJSON accepts the struct, a plain number, null or a string.
func (n *NoVal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*n = NoVal{}
		return nil
	case b[0] == '{':
		var s struct {
			Set      *bool        `json:"set"`
			Infinite bool         `json:"infinite"`
			Number   *json.Number `json:"number"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*n = NoVal{Infinite: s.Infinite}
		if s.Number != nil {
			v, err := parseWhole(string(*s.Number))
			if err != nil {
				return err
			}
			n.Number = v
		}
		// Slurm treats a number without "set" as set.
		n.Set = s.Infinite || (s.Set == nil && s.Number != nil) || (s.Set != nil && *s.Set)
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch strings.ToUpper(strings.TrimSpace(s)) {
		case "INFINITE", "UNLIMITED":
			*n = Infinite()
			return nil
		case "":
			*n = NoVal{}
			return nil
		}
		v, err := parseWhole(s)
		if err != nil {
			return err
		}
		*n = Num(v)
		return nil
	}
	v, err := parseWhole(string(b))
	if err != nil {
		return err
	}
	*n = Num(v)
	return nil
}

// parseWhole accepts integers, and floats only when they are whole
// numbers (JSON clients often send 4.0).
func parseWhole(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return int64(f), nil
}
