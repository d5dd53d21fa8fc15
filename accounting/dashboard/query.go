package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// DefaultWindow is the window shown when a request names none: the last 30 days.
const DefaultWindow = 30 * 24 * time.Hour

func badRequest(source, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, source: source, msg: fmt.Sprintf(format, args...)}
}

// optTime reads an optional time parameter; zero when absent.
func optTime(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := accounting.ParseTime(v)
	if err != nil {
		return t, badRequest(name, "%s: %v", name, err)
	}
	return t, nil
}

// window reads start and end, defaulting to the DefaultWindow before now; end must be
// after start.
func window(q url.Values, now time.Time) (time.Time, time.Time, error) {
	start, err := optTime(q, "start")
	if err != nil {
		return start, start, err
	}
	end, err := optTime(q, "end")
	if err != nil {
		return start, end, err
	}
	if end.IsZero() {
		end = now.UTC().Truncate(time.Second)
	}
	if start.IsZero() {
		start = end.Add(-DefaultWindow)
	}
	if !end.After(start) {
		return start, end, badRequest("end", "end %s is not after start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	return start, end, nil
}

// list reads a comma-separated parameter; nil when absent.
func list(q url.Values, name string) []string {
	var out []string
	for _, v := range strings.Split(q.Get(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// count reads a non-negative integer parameter, def when absent.
func count(q url.Values, name string, def int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest(name, "%s must be a whole number >= 0, got %q", name, v)
	}
	return n, nil
}

// jobFilter reads sacct's filters: users, accounts, partitions, states, job ids and an
// optional window.
func jobFilter(q url.Values) (accounting.JobFilter, error) {
	f := accounting.JobFilter{Users: list(q, "users"), Accounts: list(q, "accounts"), Partitions: list(q, "partitions")}
	for _, s := range list(q, "states") {
		st, err := accounting.ParseJobState(s)
		if err != nil {
			return f, badRequest("states", "%v", err)
		}
		f.States = append(f.States, st)
	}
	for _, s := range list(q, "ids") {
		id, err := strconv.ParseInt(strings.SplitN(s, ".", 2)[0], 10, 64)
		if err != nil || id <= 0 {
			return f, badRequest("ids", "job id %q is not a positive number", s)
		}
		f.JobIDs = append(f.JobIDs, id)
	}
	var err error
	if f.Start, err = optTime(q, "start"); err != nil {
		return f, err
	}
	if f.End, err = optTime(q, "end"); err != nil {
		return f, err
	}
	if !f.Start.IsZero() && !f.End.IsZero() && !f.End.After(f.Start) {
		return f, badRequest("end", "end %s is not after start %s", f.End.Format(time.RFC3339), f.Start.Format(time.RFC3339))
	}
	return f, nil
}
