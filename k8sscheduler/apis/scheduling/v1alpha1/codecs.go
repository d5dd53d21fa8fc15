package v1alpha1

import (
	"fmt"
	"strconv"
	"time"
)

// Every sluice.dev/ label and annotation value that carries structure (a number, a time, a
// list, JSON) has a Format and a Parse function (or Encode and Parse methods) beside its
// key, in a file of its theme; every reader and writer goes through them, and TestCodecs
// round-trips each. A key whose value is a plain name or a "true" flag has none.

// parseValue reads the value of key with parse, naming the key in the error.
func parseValue[T any](key, value string, parse func(string) (T, error)) (T, error) {
	v, err := parse(value)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}

// Parsers of the forms values take, for parseValue.
func decimalInt64(s string) (int64, error)    { return strconv.ParseInt(s, 10, 64) }
func rfc3339(s string) (time.Time, error)     { return time.Parse(time.RFC3339, s) }
func rfc3339Nano(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
