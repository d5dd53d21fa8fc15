package slurmapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// submitRequest is the body of POST job/submit in every version: the
// script (top level or inside job) and one job description. The jobs[]
// (hetjob) form is recognised only to refuse it clearly.
type submitRequest struct {
	Script string            `json:"script"`
	Job    *jobDescIn        `json:"job"`
	Jobs   []json.RawMessage `json:"jobs"`
	// warnings name the job's fields accepted without effect.
	warnings []string
}

// jobDescIn is the subset of job_desc_msg that Sluice acts on. Numeric
// fields use NoVal so that plain numbers, no-value structs and numeric
// strings are all accepted, as slurmrestd's parser accepts them.
type jobDescIn struct {
	Script         string      `json:"script"`
	Argv           []string    `json:"argv"`
	Name           *string     `json:"name"`
	Partition      *string     `json:"partition"`
	Account        *string     `json:"account"`
	QOS            *string     `json:"qos"`
	TRESPerNode    *string     `json:"tres_per_node"`
	TRESPerJob     *string     `json:"tres_per_job"`
	TRESPerTask    *string     `json:"tres_per_task"`
	MemoryPerTRES  *string     `json:"memory_per_tres"`
	Nodes          *string     `json:"nodes"` // "2" or "2-4"
	MinimumNodes   NoVal       `json:"minimum_nodes"`
	MaximumNodes   NoVal       `json:"maximum_nodes"`
	Tasks          NoVal       `json:"tasks"`
	TasksPerNode   NoVal       `json:"tasks_per_node"`
	CPUsPerTask    NoVal       `json:"cpus_per_task"`
	MemoryPerNode  NoVal       `json:"memory_per_node"`
	MemoryPerCPU   NoVal       `json:"memory_per_cpu"`
	TimeLimit      NoVal       `json:"time_limit"`
	Priority       NoVal       `json:"priority"`
	Nice           NoVal       `json:"nice"`
	BeginTime      NoVal       `json:"begin_time"`
	Environment    environment `json:"environment"`
	WorkDir        *string     `json:"current_working_directory"`
	Requeue        *bool       `json:"requeue"`
	Hold           *bool       `json:"hold"`
	Dependency     *string     `json:"dependency"`
	Array          *string     `json:"array"`
	Comment        *string     `json:"comment"`
	Reservation    *string     `json:"reservation"`
	Stdout         *string     `json:"standard_output"`
	Stderr         *string     `json:"standard_error"`
	Stdin          *string     `json:"standard_input"`
	ContainerImage *string     `json:"container_image"` // Sluice extension, like --container-image
	OpenMode       openModeIn  `json:"open_mode"`
	// Placement: constraints (features), required_nodes, excluded_nodes,
	// required_switches, and shared ["none"] for --exclusive.
	Constraints      *string   `json:"constraints"`
	RequiredNodes    csvString `json:"required_nodes"`
	ExcludedNodes    csvString `json:"excluded_nodes"`
	RequiredSwitches NoVal     `json:"required_switches"`
	WaitForSwitch    NoVal     `json:"wait_for_switch"` // seconds
	Shared           []string  `json:"shared"`
	Flags            []string  `json:"flags"`
	// The warning signal (--signal): name or number, seconds before the
	// time limit, BATCH_JOB / RESERVATION_JOB.
	KillWarningSignal *string  `json:"kill_warning_signal"`
	KillWarningDelay  NoVal    `json:"kill_warning_delay"`
	KillWarningFlags  []string `json:"kill_warning_flags"`
}

// csvString is slurmrestd's csv_string: an array of strings, or one comma-separated
// string as older clients send it.
type csvString []string

func (c *csvString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = nil
		if s != "" {
			*c = []string{s}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("expected an array of strings or a comma-separated string")
	}
	*c = list
	return nil
}

// environment accepts the string array slurmrestd documents and, as
// older clients send, an object of names to values.
type environment []string

func (e *environment) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*e = nil
		return nil
	case len(b) > 0 && b[0] == '{':
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("environment object must map names to strings")
		}
		out := make([]string, 0, len(m))
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		sort.Strings(out)
		*e = out
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("environment must be an array of NAME=value strings")
	}
	for _, kv := range list {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("environment entry %q is not NAME=value", kv)
		}
	}
	*e = list
	return nil
}

// decodeSubmitBody parses the JSON body; the error is a 400 naming where
// the JSON is wrong.
func decodeSubmitBody(body []byte) (*submitRequest, *Error) {
	var req submitRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	if len(req.Jobs) > 0 {
		return nil, BadRequest(ErrNotSupported, "jobs", "heterogeneous jobs (jobs[]) are not supported; submit one job with \"job\"")
	}
	if req.Job == nil {
		return nil, BadRequest(ErrRestInvalidJobs, "job", "the request has no \"job\" description")
	}
	var raw struct {
		Job json.RawMessage `json:"job"`
	}
	if err := json.Unmarshal(body, &raw); err == nil {
		warnings, e := checkJobDescFields(raw.Job)
		if e != nil {
			return nil, e
		}
		req.warnings = warnings
	}
	return &req, nil
}

// jsonProblem words a decoding error for a user: where, and what.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return fmt.Sprintf("field %s: expected %s, got JSON %s", field, typ.Type, typ.Value)
	}
	return "invalid request: " + err.Error()
}
