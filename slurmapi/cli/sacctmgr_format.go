package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// showQuery is what follows `sacctmgr show ENTITY`: where-filters (user=alice,bob
// account=nlp name=high, matched against the column of that name; name= is the first
// column) and format=A,B%20.
type showQuery struct {
	format  string
	filters map[string][]string
}

// showFormat reads it; words it cannot apply are refused rather than ignored, since
// ignoring a filter would show more than asked.
func showFormat(words []string) (showQuery, error) {
	q := showQuery{filters: map[string][]string{}}
	for _, w := range words {
		key, value, ok := strings.Cut(w, "=")
		key = strings.ToLower(key)
		switch {
		case ok && key == "format":
			q.format = value
		case ok && value != "":
			key = strings.TrimSuffix(key, "s") // users=, accounts=, names= as sacctmgr takes them
			q.filters[key] = strings.Split(value, ",")
		case key == "where", key == "withassoc":
		default:
			return q, UsageError{fmt.Sprintf("sacctmgr show: %q is not supported (where KEY=VALUE and format= are)", w)}
		}
	}
	return q, nil
}

// showEntity lists one entity's rows in the columns format names (all of them when "").
func showEntity[T any](ctx context.Context, w io.Writer, list func(context.Context) ([]T, error), all []sacctmgrColumn[T], q showQuery, noHeader, parsable bool) error {
	cols, err := pickColumns(all, q.format)
	if err != nil {
		return err
	}
	keep := make(map[int][]string, len(q.filters)) // column index -> values
	for key, values := range q.filters {
		i := 0 // name=: the entity's own name
		if key != "name" {
			if i = columnIndex(all, key); i < 0 {
				return UsageError{fmt.Sprintf("sacctmgr show: no field %q to filter on", key)}
			}
		}
		keep[i] = values
	}
	rows, err := list(ctx)
	if err != nil {
		return err
	}
	rows = slices.DeleteFunc(rows, func(r T) bool {
		for i, values := range keep {
			if !slices.ContainsFunc(values, func(v string) bool { return strings.EqualFold(v, all[i].value(r)) }) {
				return true
			}
		}
		return false
	})
	writeSacctmgr(w, cols, rows, noHeader, parsable)
	return nil
}

// columnIndex finds a column by its name in a format= or filter: any case, spaces in
// the titles left out, sacctmgr's long names (DefaultAccount, DefaultQOS) too; -1 if none.
func columnIndex[T any](all []sacctmgrColumn[T], name string) int {
	aliases := map[string]string{"defaultaccount": "defacct", "defaultqos": "defqos", "adminlevel": "admin", "description": "descr",
		"organization": "org", "shares": "share", "fairshare": "share"}
	key := strings.ToLower(name)
	if a, ok := aliases[key]; ok {
		key = a
	}
	return slices.IndexFunc(all, func(c sacctmgrColumn[T]) bool { return strings.ToLower(strings.ReplaceAll(c.title, " ", "")) == key })
}

// pickColumns is format= as sacctmgr reads it: column names (columnIndex), each with an
// optional %WIDTH.
func pickColumns[T any](all []sacctmgrColumn[T], format string) ([]sacctmgrColumn[T], error) {
	if format == "" {
		return all, nil
	}
	var out []sacctmgrColumn[T]
	for _, f := range strings.Split(format, ",") {
		name, width, sized := strings.Cut(strings.TrimSpace(f), "%")
		i := columnIndex(all, name)
		if i < 0 {
			return nil, UsageError{fmt.Sprintf("Invalid field requested: %q", name)}
		}
		col := all[i]
		if sized {
			n, err := strconv.Atoi(width)
			if err != nil || n < 1 {
				return nil, UsageError{fmt.Sprintf("format=%s: %q is not a width", f, width)}
			}
			col.width = n
		}
		out = append(out, col)
	}
	return out, nil
}
