package slurmapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

func handleDBDiag(s *Server, c *call) (map[string]any, error) {
	types, users := s.stats.snapshot()
	rpcs := make([]any, 0, len(types))
	for _, t := range types {
		rpcs = append(rpcs, map[string]any{"rpc": t.name, "count": t.count, "time": map[string]any{"average": avgMicros(t), "total": t.total.Microseconds()}})
	}
	byUser := make([]any, 0, len(users))
	for _, u := range users {
		byUser = append(byUser, map[string]any{"user": u.name, "count": u.count, "time": map[string]any{"average": avgMicros(u), "total": u.total.Microseconds()}})
	}
	return map[string]any{"statistics": map[string]any{
		"time_start": s.started.Unix(), "RPCs": rpcs, "users": byUser,
		"rollups": map[string]any{},
	}}, nil
}

// dbJobFilter reads slurmdbd's job filters: users, account, partition,
// state, job_name (comma-separated lists) and the start_time/end_time window
// (UNIX seconds or YYYY-MM-DD[THH:MM[:SS]] UTC), in which a job matches when
// it existed: submitted before end_time, not ended before start_time. A user
// who names nobody asks for their own jobs.
func dbJobFilter(c *call) (accounting.JobFilter, *Error) {
	q := c.r.URL.Query()
	f := accounting.JobFilter{Users: csv(q.Get("users")), Accounts: csv(q.Get("account")), Partitions: csv(q.Get("partition")),
		Names: csv(q.Get("job_name"))}
	for _, name := range csv(q.Get("state")) {
		st, err := accounting.ParseJobState(name)
		if err != nil {
			return f, BadRequest(ErrRestInvalidQuery, "state", "%v", err)
		}
		f.States = append(f.States, st)
	}
	for _, bound := range []struct {
		param string
		into  *time.Time
	}{{"start_time", &f.Start}, {"end_time", &f.End}} {
		if v := q.Get(bound.param); v != "" {
			t, err := accounting.ParseTime(v)
			if err != nil {
				return f, BadRequest(ErrRestInvalidQuery, bound.param, "%s: %v", bound.param, err)
			}
			*bound.into = t
		}
	}
	if !f.Start.IsZero() && !f.End.IsZero() && !f.End.After(f.Start) {
		return f, BadRequest(ErrRestInvalidQuery, "end_time", "end_time %s is not after start_time %s", f.End.Format(time.RFC3339), f.Start.Format(time.RFC3339))
	}
	if c.id.seesOnlyOwnJobs() && len(f.Users) == 0 {
		f.Users = []string{c.id.User}
	}
	return f, nil
}

// accountingJobs lists the jobs f selects: from the ledger when the server
// has one, else from the jobs still in the cluster. Callers check access.
func accountingJobs(s *Server, c *call, f accounting.JobFilter) ([]Job, error) {
	ledger := ledgerOf(s.backend)
	if ledger == nil {
		live, err := s.backend.AccountingJobs(c.ctx, liveFilter(f))
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(live, func(j Job) bool {
			return (len(f.Names) > 0 && !slices.Contains(f.Names, j.Desc.Name)) || (!f.End.IsZero() && !j.SubmitTime.Before(f.End))
		}), nil
	}
	recs, err := ledger.Jobs(c.ctx, f)
	if err != nil {
		return nil, err
	}
	jobs, unlisted := make([]Job, 0, len(recs)), 0
	for i := range recs {
		if j, ok := fromLedger(&recs[i]); ok {
			jobs = append(jobs, j)
		} else {
			unlisted++
		}
	}
	if unlisted > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%d manifest workloads have no Slurm job id and are not listed; `sluice sacct` shows them", unlisted))
	}
	return jobs, nil
}

// liveFilter is f for a backend without a ledger (names and end_time are
// applied to its answer).
func liveFilter(f accounting.JobFilter) JobFilter {
	lf := JobFilter{Users: f.Users, Accounts: f.Accounts, Partitions: f.Partitions, Since: f.Start}
	for _, id := range f.JobIDs {
		lf.IDs = append(lf.IDs, uint32(id))
	}
	for _, st := range f.States {
		lf.States = append(lf.States, string(st))
	}
	return lf
}

func handleDBJobs(s *Server, c *call) (map[string]any, error) {
	f, e := dbJobFilter(c)
	if e != nil {
		return nil, e
	}
	jobs, err := accountingJobs(s, c, f)
	if err != nil {
		return nil, err
	}
	jobs = slices.DeleteFunc(jobs, func(j Job) bool { return !c.id.CanSeeJob(j.Desc.User, j.Desc.Account) })
	rendered := make([]map[string]any, len(jobs))
	list := make([]any, len(jobs))
	for i := range jobs {
		rendered[i] = renderDBJob(&jobs[i], s.cfg.ClusterName)
		list[i] = rendered[i]
	}
	if err := attachSteps(c.ctx, s.backend, s.liveSteps(), jobs, rendered); err != nil {
		return nil, err
	}
	return map[string]any{"jobs": list}, nil
}

func handleDBJob(s *Server, c *call) (map[string]any, error) {
	id, e := parseJobID(c.vars["job_id"], "job_id")
	if e != nil {
		return nil, e
	}
	jobs, err := accountingJobs(s, c, accounting.JobFilter{JobIDs: []int64{int64(id)}})
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, NotFound(ErrInvalidJobID, "job_id", "job %d has no accounting record", id)
	}
	if !c.id.CanSeeJob(jobs[0].Desc.User, jobs[0].Desc.Account) {
		return nil, Forbidden("job_id", "job %d belongs to %s; %s may not access it", id, jobs[0].Desc.User, c.id.User)
	}
	rendered := []map[string]any{renderDBJob(&jobs[0], s.cfg.ClusterName)}
	if err := attachSteps(c.ctx, s.backend, s.liveSteps(), jobs[:1], rendered); err != nil {
		return nil, err
	}
	return map[string]any{"jobs": []any{rendered[0]}}, nil
}

func handleAccounts(s *Server, c *call) (map[string]any, error) {
	accts, err := s.backend.Accounts(c.ctx)
	if err != nil {
		return nil, err
	}
	view, err := s.accountViewFor(c)
	if err != nil {
		return nil, err
	}
	list := make([]any, 0, len(accts))
	for i := range accts {
		if view.account(accts[i].Name) {
			list = append(list, renderAccount(&accts[i]))
		}
	}
	return map[string]any{"accounts": list}, nil
}

func handleAccount(s *Server, c *call) (map[string]any, error) {
	name := c.vars["account_name"]
	view, err := s.accountViewFor(c)
	if err != nil {
		return nil, err
	}
	// Refused before the lookup, so the answer never tells whether it exists.
	if !view.account(name) {
		return nil, Forbidden("account_name", "account %q is private (PrivateData=accounts): %s sees only the accounts they belong to or coordinate", name, c.id.User)
	}
	accts, err := s.backend.Accounts(c.ctx)
	if err != nil {
		return nil, err
	}
	for i := range accts {
		if accts[i].Name == name {
			return map[string]any{"accounts": []any{renderAccount(&accts[i])}}, nil
		}
	}
	return nil, NotFound(ErrInvalidAccount, "account_name", "account %q does not exist", name)
}

// requireAdmin guards sacctmgr-style writes.
func requireAdmin(c *call) *Error {
	if !c.id.CanAdminister() {
		return Forbidden("authorization", "user %s is not an administrator; account, user, association and QOS changes need one", c.id.User)
	}
	return nil
}

// decodeWrite reads a slurmdb POST body after checking the caller.
func decodeWrite(c *call, into any) *Error {
	if e := requireAdmin(c); e != nil {
		return e
	}
	body, e := readBody(c)
	if e != nil {
		return e
	}
	if err := json.Unmarshal(body, into); err != nil {
		return BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	return nil
}

type accountsIn struct {
	Accounts []struct {
		Name         string `json:"name"`
		Description  string `json:"description"`
		Organization string `json:"organization"`
		Coordinators []struct {
			Name string `json:"name"`
		} `json:"coordinators"`
	} `json:"accounts"`
}

func handlePostAccounts(s *Server, c *call) (map[string]any, error) {
	var in accountsIn
	if e := decodeWrite(c, &in); e != nil {
		return nil, e
	}
	if len(in.Accounts) == 0 {
		return nil, BadRequest(ErrRestInvalidQuery, "accounts", "no accounts given")
	}
	out := make([]Account, len(in.Accounts))
	for i, a := range in.Accounts {
		if !validObjectName(a.Name) {
			return nil, BadRequest(ErrInvalidAccount, "accounts", "account name %q must be lower-case letters, digits and '-' (it names a Queue)", a.Name)
		}
		out[i] = Account{Name: a.Name, Description: a.Description, Organization: a.Organization}
		for _, co := range a.Coordinators {
			out[i].Coordinators = append(out[i].Coordinators, co.Name)
		}
	}
	return map[string]any{}, s.backend.UpsertAccounts(c.ctx, out)
}

// validObjectName: account and QOS names become Kubernetes object names.
func validObjectName(n string) bool {
	if n == "" || len(n) > 63 || n[0] == '-' || n[len(n)-1] == '-' {
		return false
	}
	for _, r := range n {
		if !(r == '-' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

func handleDeleteAccount(s *Server, c *call) (map[string]any, error) {
	if e := requireAdmin(c); e != nil {
		return nil, e
	}
	name := c.vars["account_name"]
	if err := s.backend.DeleteAccount(c.ctx, name); err != nil {
		return nil, err
	}
	return map[string]any{"removed_accounts": []any{name}}, nil
}

func handleAssociations(s *Server, c *call) (map[string]any, error) {
	assocs, err := s.backend.Associations(c.ctx)
	if err != nil {
		return nil, err
	}
	accounts, err := s.backend.Accounts(c.ctx)
	if err != nil {
		return nil, err
	}
	maxSubmit := make(map[string]int, len(accounts)) // Slurm's MaxSubmitJobs, held on the account's Queue
	for _, a := range accounts {
		maxSubmit[a.Name] = a.MaxSubmitJobs
	}
	q := c.r.URL.Query()
	view := c.id.viewWith(assocs)
	list := []any{}
	for i := range assocs {
		a := &assocs[i]
		if a.Cluster == "" {
			a.Cluster = s.cfg.ClusterName // one cluster: every association is this one's
		}
		if view.association(a) && matches(q.Get("account"), a.Account) && matches(q.Get("user"), a.User) && matches(q.Get("partition"), a.Partition) {
			list = append(list, renderAssoc(a, maxSubmit[a.Account]))
		}
	}
	return map[string]any{"associations": list}, nil
}

type assocsIn struct {
	Associations []struct {
		Account   string   `json:"account"`
		User      string   `json:"user"`
		Partition string   `json:"partition"`
		Parent    string   `json:"parent_account"`
		QOS       []string `json:"qos"`
		Default   struct {
			QOS string `json:"qos"`
		} `json:"default"`
		SharesRaw int64 `json:"shares_raw"`
		IsDefault bool  `json:"is_default"`
	} `json:"associations"`
}

func handlePostAssociations(s *Server, c *call) (map[string]any, error) {
	var in assocsIn
	if e := decodeWrite(c, &in); e != nil {
		return nil, e
	}
	if len(in.Associations) == 0 {
		return nil, BadRequest(ErrRestInvalidQuery, "associations", "no associations given")
	}
	out := make([]Association, len(in.Associations))
	for i, a := range in.Associations {
		if a.Account == "" {
			return nil, BadRequest(ErrInvalidAccount, "associations", "association %d has no account", i)
		}
		if a.SharesRaw < 0 {
			return nil, BadRequest(ErrRestInvalidQuery, "associations", "shares_raw must not be negative")
		}
		out[i] = Association{Account: a.Account, User: a.User, Partition: a.Partition, Parent: a.Parent,
			QOS: a.QOS, DefaultQOS: a.Default.QOS, Shares: a.SharesRaw, IsDefault: a.IsDefault}
	}
	return map[string]any{}, s.backend.UpsertAssociations(c.ctx, out)
}

func handleQOSList(s *Server, c *call) (map[string]any, error) {
	list, err := s.backend.QOSList(c.ctx)
	if err != nil {
		return nil, err
	}
	nameFilter := c.r.URL.Query().Get("name")
	out := []any{}
	for i := range list {
		if matches(nameFilter, list[i].Name) {
			out = append(out, renderQOS(&list[i]))
		}
	}
	return map[string]any{"qos": out}, nil
}

func handleQOS(s *Server, c *call) (map[string]any, error) {
	list, err := s.backend.QOSList(c.ctx)
	if err != nil {
		return nil, err
	}
	name := c.vars["qos"]
	for i := range list {
		if list[i].Name == name {
			return map[string]any{"qos": []any{renderQOS(&list[i])}}, nil
		}
	}
	return nil, NotFound(ErrInvalidQOS, "qos", "QOS %q does not exist", name)
}

type qosIn struct {
	QOS []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Priority    NoVal  `json:"priority"`
		Preempt     struct {
			Mode []string `json:"mode"`
		} `json:"preempt"`
		UsageFactor *struct {
			Number float64 `json:"number"`
		} `json:"usage_factor"`
		Flags []string `json:"flags"`
	} `json:"qos"`
}

func handlePostQOS(s *Server, c *call) (map[string]any, error) {
	var in qosIn
	if e := decodeWrite(c, &in); e != nil {
		return nil, e
	}
	if len(in.QOS) == 0 {
		return nil, BadRequest(ErrRestInvalidQuery, "qos", "no QOS given")
	}
	out := make([]QOS, len(in.QOS))
	for i, q := range in.QOS {
		if !validObjectName(q.Name) {
			return nil, BadRequest(ErrInvalidQOS, "qos", "QOS name %q must be lower-case letters, digits and '-' (it names a QOS object)", q.Name)
		}
		out[i] = QOS{Name: q.Name, Description: q.Description, UsageFactor: 1, PreemptMode: "OFF"}
		if p, ok := q.Priority.Value(); ok {
			out[i].Priority = p
		}
		if q.UsageFactor != nil {
			if q.UsageFactor.Number < 0 {
				return nil, BadRequest(ErrInvalidQOS, "qos.usage_factor", "usage_factor must not be negative")
			}
			out[i].UsageFactor = q.UsageFactor.Number
		}
		for _, m := range q.Preempt.Mode {
			switch strings.ToUpper(m) {
			case "REQUEUE", "CANCEL":
				out[i].PreemptMode = strings.ToUpper(m)
			case "DISABLED", "OFF":
			default:
				return nil, BadRequest(ErrInvalidQOS, "qos.preempt.mode", "preempt mode %q is not supported (REQUEUE, CANCEL or DISABLED)", m)
			}
		}
	}
	return map[string]any{}, s.backend.UpsertQOS(c.ctx, out)
}

func handleDeleteQOS(s *Server, c *call) (map[string]any, error) {
	if e := requireAdmin(c); e != nil {
		return nil, e
	}
	name := c.vars["qos"]
	if err := s.backend.DeleteQOS(c.ctx, name); err != nil {
		return nil, err
	}
	return map[string]any{"removed_qos": []any{name}}, nil
}

func handleUsers(s *Server, c *call) (map[string]any, error) {
	users, err := s.backend.Users(c.ctx)
	if err != nil {
		return nil, err
	}
	view, err := s.accountViewFor(c)
	if err != nil {
		return nil, err
	}
	list := make([]any, 0, len(users))
	for i := range users {
		if u, ok := view.user(users[i]); ok {
			list = append(list, renderUser(&u, s.cfg.ClusterName))
		}
	}
	return map[string]any{"users": list}, nil
}

func handleUser(s *Server, c *call) (map[string]any, error) {
	name := c.vars["name"]
	// Refused before the lookup, so the answer never tells whether the user exists.
	if !c.id.CanSeeUser(name) {
		return nil, Forbidden("name", "user %q is private (PrivateData=users): %s sees only their own record", name, c.id.User)
	}
	users, err := s.backend.Users(c.ctx)
	if err != nil {
		return nil, err
	}
	view, err := s.accountViewFor(c)
	if err != nil {
		return nil, err
	}
	for i := range users {
		if users[i].Name == name {
			u, _ := view.user(users[i])
			return map[string]any{"users": []any{renderUser(&u, s.cfg.ClusterName)}}, nil
		}
	}
	return nil, NotFound(ErrRestEmptyResult, "name", "user %q does not exist", name)
}

type usersIn struct {
	Users []struct {
		Name    string `json:"name"`
		Default struct {
			Account string `json:"account"`
		} `json:"default"`
		AdministratorLevel []string `json:"administrator_level"`
	} `json:"users"`
}

func handlePostUsers(s *Server, c *call) (map[string]any, error) {
	var in usersIn
	if e := decodeWrite(c, &in); e != nil {
		return nil, e
	}
	if len(in.Users) == 0 {
		return nil, BadRequest(ErrRestInvalidQuery, "users", "no users given")
	}
	out := make([]User, len(in.Users))
	for i, u := range in.Users {
		if err := ValidUserName(u.Name); err != nil {
			return nil, BadRequest(ErrRestInvalidQuery, "users", "user %d: %v", i, err)
		}
		out[i] = User{Name: u.Name, DefaultAccount: u.Default.Account, AdminLevel: "None"}
		if len(u.AdministratorLevel) > 0 {
			out[i].AdminLevel = u.AdministratorLevel[0]
		}
	}
	return map[string]any{}, s.backend.UpsertUsers(c.ctx, out)
}

func handleTRES(s *Server, c *call) (map[string]any, error) {
	ts, err := s.backend.TRES(c.ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"TRES": renderTRES(ts)}, nil
}

func (s *Server) cluster() Cluster {
	return Cluster{Name: s.cfg.ClusterName, Controller: s.cfg.Hostname, Port: DefaultPort}
}

func handleClusters(s *Server, c *call) (map[string]any, error) {
	return map[string]any{"clusters": []any{renderCluster(s.cluster())}}, nil
}

func handleCluster(s *Server, c *call) (map[string]any, error) {
	if name := c.vars["cluster_name"]; name != s.cfg.ClusterName {
		return nil, NotFound(ErrRestEmptyResult, "cluster_name", "cluster %q does not exist; this is %q", name, s.cfg.ClusterName)
	}
	return handleClusters(s, c)
}

// handleDBConfig is `sacctmgr dump`: everything the accounting side knows.
func handleDBConfig(s *Server, c *call) (map[string]any, error) {
	parts := map[string]func() (map[string]any, error){
		"accounts":     func() (map[string]any, error) { return handleAccounts(s, c) },
		"associations": func() (map[string]any, error) { return handleAssociations(s, c) },
		"qos":          func() (map[string]any, error) { return handleQOSList(s, c) },
		"users":        func() (map[string]any, error) { return handleUsers(s, c) },
		"tres":         func() (map[string]any, error) { return handleTRES(s, c) },
	}
	out := map[string]any{"clusters": []any{renderCluster(s.cluster())}, "wckeys": []any{}}
	for _, load := range parts {
		m, err := load()
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			if k == "TRES" {
				k = "tres"
			}
			out[k] = v
		}
	}
	return out, nil
}
