package slurmapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// NodeUpdate is what POST node/{node_name} may change: scontrol update
// NodeName=... State=DRAIN Reason=... (or RESUME / UNDRAIN).
type NodeUpdate struct {
	Drain  bool   // true: DRAIN; false: RESUME
	Reason string // why, for DRAIN
	User   string // who, shown as the reason's user
}

// nodeUpdateIn is what POST node/{node_name} reads of update_node_msg.
type nodeUpdateIn struct {
	State  []string `json:"state"`
	Reason string   `json:"reason"`
}

// nodeUpdatable are the update_node_msg fields a node update acts on;
// name and reason_uid only restate the node and the caller.
var nodeUpdatable = map[string]bool{"state": true, "reason": true, "name": true, "reason_uid": true}

// handleUpdateNode drains a node (the Kubernetes cordon, with the reason
// kept on the node) or resumes it, as scontrol update NodeName= does;
// operators and administrators only, as in Slurm.
func handleUpdateNode(s *Server, c *call) (map[string]any, error) {
	if !c.id.IsOperator() {
		return nil, Forbidden("node_name", "user %s may not change nodes: only operators and administrators may", c.id.User)
	}
	body, e := readBody(c)
	if e != nil {
		return nil, e
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	var refused []string
	for name, raw := range fields {
		if !nodeUpdatable[name] && !emptyJSON(raw) {
			refused = append(refused, name)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, BadRequest(ErrNotSupported, refused[0], "changing %s of a node is not supported: node features, GRES and weights come from the Kubernetes Node; a node update may set state DRAIN or RESUME with a reason", strings.Join(refused, ", "))
	}
	var in nodeUpdateIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	u, e := nodeUpdate(in, c.id.User)
	if e != nil {
		return nil, e
	}
	warning, err := s.backend.UpdateNode(c.ctx, c.vars["node_name"], u)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		c.warnings = append(c.warnings, warning)
	}
	return map[string]any{}, nil
}

// nodeUpdate reads the requested state as slurmctld does: DRAIN needs a
// reason; RESUME and UNDRAIN end a drain; any other state is refused.
func nodeUpdate(in nodeUpdateIn, user string) (NodeUpdate, *Error) {
	if len(in.State) != 1 {
		return NodeUpdate{}, BadRequest(ErrInvalidNodeState, "state", "give one state, DRAIN or RESUME (got %q)", in.State)
	}
	switch st := strings.ToUpper(in.State[0]); st {
	case "DRAIN":
		reason := strings.TrimSpace(in.Reason)
		if reason == "" {
			return NodeUpdate{}, BadRequest(ErrInvalidNodeState, "reason", "a reason is required to drain a node, as scontrol requires it")
		}
		if e := checkText("reason", reason, MaxCommentChars, false); e != nil {
			return NodeUpdate{}, e
		}
		return NodeUpdate{Drain: true, Reason: reason, User: user}, nil
	case "RESUME", "UNDRAIN", "IDLE":
		return NodeUpdate{User: user}, nil
	default:
		return NodeUpdate{}, BadRequest(ErrInvalidNodeState, "state", "%s", fmt.Sprintf("state %s is not supported: a node may be drained (DRAIN, its jobs run to their end) or resumed (RESUME); the kubelet and the remediation controller decide the rest", st))
	}
}
