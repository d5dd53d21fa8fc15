package slurmapi

import (
	"strings"
	"time"
)

func renderAccount(a *Account) map[string]any {
	coords := make([]any, len(a.Coordinators))
	for i, c := range a.Coordinators {
		coords[i] = map[string]any{"name": c, "direct": true}
	}
	return map[string]any{
		"name": a.Name, "description": a.Description, "organization": a.Organization,
		"coordinators": coords, "associations": []any{}, "flags": []any{},
	}
}

// renderAssoc is one association; maxSubmit is its account's per-user MaxSubmitJobs
// (0: unlimited), shown on the users' associations as Slurm's max.jobs.per.submitted.
func renderAssoc(a *Association, maxSubmit int) map[string]any {
	submitted := Infinite().tree()
	if maxSubmit > 0 && a.User != "" {
		submitted = Num(int64(maxSubmit)).tree()
	}
	return map[string]any{
		"id": a.ID, "cluster": a.Cluster, "account": a.Account, "user": a.User,
		"partition": a.Partition, "parent_account": a.Parent, "qos": strList(a.QOS),
		"default": map[string]any{"qos": a.DefaultQOS}, "is_default": a.IsDefault,
		"shares_raw": a.Shares, "flags": []any{},
		"max": map[string]any{"jobs": map[string]any{"per": map[string]any{"submitted": submitted}}},
	}
}

func renderQOS(q *QOS) map[string]any {
	mode := q.PreemptMode
	if mode == "" || mode == "OFF" {
		mode = "DISABLED"
	}
	wall := Infinite().tree()
	if q.MaxWall > 0 {
		wall = Num(int64(q.MaxWall / time.Minute)).tree()
	}
	perUserJobs := Infinite().tree()
	if q.MaxJobsPerUser > 0 {
		perUserJobs = Num(int64(q.MaxJobsPerUser)).tree()
	}
	flags := []any{}
	return map[string]any{
		"id": q.ID, "name": q.Name, "description": q.Description, "flags": flags,
		"priority": Num(q.Priority).tree(), "usage_factor": floatNoVal(q.UsageFactor),
		"preempt": map[string]any{"mode": []any{mode}, "list": []any{}},
		"limits": map[string]any{"max": map[string]any{
			"wall_clock": map[string]any{"per": map[string]any{"job": wall}},
			"jobs":       map[string]any{"active_jobs": map[string]any{"per": map[string]any{"user": perUserJobs}}},
			"tres":       map[string]any{"total": tresList(q.GrpTRES), "per": map[string]any{"user": tresList(q.MaxTRESPerUser)}},
		}},
	}
}

func renderUser(u *User, cluster string) map[string]any {
	level := u.AdminLevel
	if level == "" {
		level = "None"
	}
	coords := make([]any, len(u.Coordinates))
	for i, a := range u.Coordinates {
		coords[i] = map[string]any{"name": a, "direct": true}
	}
	assocs := make([]any, len(u.Associations))
	for i, a := range u.Associations {
		assocs[i] = map[string]any{"account": a.Account, "cluster": cluster, "partition": a.Partition, "user": u.Name, "id": a.ID}
	}
	return map[string]any{
		"name": u.Name, "administrator_level": []any{level},
		"default": map[string]any{"account": u.DefaultAccount}, "coordinators": coords,
		"associations": assocs, "flags": []any{}, "wckeys": []any{},
	}
}

func renderTRES(ts []TRES) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = map[string]any{"id": t.ID, "type": t.Type, "name": t.Name}
	}
	return out
}

func renderCluster(c Cluster) map[string]any {
	return map[string]any{
		"name": c.Name, "controller": map[string]any{"host": c.Controller, "port": c.Port},
		"rpc_version": c.RPCVersion, "nodes": "", "flags": []any{}, "tres": []any{},
	}
}

// matches reports whether a name passes a comma-separated filter.
func matches(filter, name string) bool {
	if filter == "" {
		return true
	}
	for _, f := range strings.Split(filter, ",") {
		if f == name {
			return true
		}
	}
	return false
}
