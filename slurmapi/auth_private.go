package slurmapi

import "slices"

// Slurm's PrivateData hides accounting data from regular users. Jobs are
// CanSeeJob's (auth.go); what PrivateData=accounts, usage and users hide is
// decided here, in one place, so the REST handlers and the dashboard
// (accounting/dashboard's Viewer) give the same answer. As in Slurm,
// operators and administrators (root and SlurmUser always) see everything,
// and a coordinator sees what concerns the accounts they coordinate.

// privacy is which of PrivateData=accounts, usage and users the site sets.
type privacy struct{ accounts, usage, users bool }

// seesAllAccounting: Slurm exempts AdminLevel Operator and up from PrivateData.
func (id Identity) seesAllAccounting() bool { return id.Role >= RoleOperator }

// coordinates reports whether the caller coordinates account. Like CanAccessJob
// it takes rest.coordinators as written: a sub-account needs its own entry.
func (id Identity) coordinates(account string) bool { return slices.Contains(id.accounts, account) }

// CanSeeUser reports whether the caller may read user's record (slurmdb users,
// user/{name}, sacctmgr show user). With PrivateData=users only their own,
// coordinators included: Slurm's coordinators "can only see themselves when
// listing users".
func (id Identity) CanSeeUser(user string) bool {
	return !id.private.users || id.seesAllAccounting() || user == id.User
}

// CanSeeUsage reports whether the caller may see the usage charged to user in
// account; user "" is the account's own row (sshare's account line, sreport's
// account total). With PrivateData=usage a user sees only their own rows and a
// coordinator every row of their accounts, as slurmctld filters sshare and
// slurmdbd filters sreport. A plain user does not see even the account rows
// above them: an account's usage less their own is the other members'.
func (id Identity) CanSeeUsage(user, account string) bool {
	switch {
	case !id.private.usage || id.seesAllAccounting():
		return true
	case user != "" && user == id.User:
		return true
	}
	return id.coordinates(account)
}

// visibleShares keeps the sshare rows the caller may see (CanSeeUsage): a user
// row is named by its user under its account, an account row by its account.
func (id Identity) visibleShares(rows []Share) []Share {
	return slices.DeleteFunc(rows, func(sh Share) bool {
		if sh.User {
			return !id.CanSeeUsage(sh.Name, sh.Parent)
		}
		return !id.CanSeeUsage("", sh.Name)
	})
}

// hidesAccounts reports whether the caller sees only some accounts
// (PrivateData=accounts, below operator): then the accounts it belongs to,
// read from the associations, decide which.
func (id Identity) hidesAccounts() bool { return id.private.accounts && !id.seesAllAccounting() }

// accountView is what one caller sees of accounts and associations: it knows
// the accounts the caller belongs to (has a user association in).
type accountView struct {
	id     Identity
	member map[string]bool
}

// viewWith is the caller's view given the site's associations (any, nil
// included, when !hidesAccounts: membership then decides nothing).
func (id Identity) viewWith(assocs []Association) accountView {
	v := accountView{id: id, member: map[string]bool{}}
	for _, a := range assocs {
		if a.User == id.User {
			v.member[a.Account] = true
		}
	}
	return v
}

// accountViewFor reads the associations the caller's view needs, and none when
// accounts are not private to it.
func (s *Server) accountViewFor(c *call) (accountView, error) {
	if !c.id.hidesAccounts() {
		return c.id.viewWith(nil), nil
	}
	assocs, err := s.backend.Associations(c.ctx)
	if err != nil {
		return accountView{}, err
	}
	return c.id.viewWith(assocs), nil
}

// account reports whether the caller may see account's definition. With
// PrivateData=accounts, those it belongs to or coordinates. slurmdbd shows a
// coordinator only the accounts they coordinate and refuses other users
// outright; an account a user belongs to is named by their own associations
// anyway, so showing its definition gives nothing away.
func (v accountView) account(name string) bool {
	return !v.id.hidesAccounts() || v.member[name] || v.id.coordinates(name)
}

// association reports whether the caller may see a. PrivateData=accounts hides
// the associations of accounts it may not see; PrivateData=users every
// association but the caller's own (account associations included) unless it
// coordinates a's account, as slurmdbd keeps to the caller's associations and
// those under the accounts it coordinates.
func (v accountView) association(a *Association) bool {
	if v.id.seesAllAccounting() {
		return true
	}
	if !v.account(a.Account) {
		return false
	}
	return !v.id.private.users || a.User == v.id.User || v.id.coordinates(a.Account)
}

// user is u as the caller may see it (ok false: not at all), its associations
// narrowed as the association list is, since they name accounts and users.
func (v accountView) user(u User) (User, bool) {
	if !v.id.CanSeeUser(u.Name) {
		return User{}, false
	}
	u.Associations = slices.DeleteFunc(slices.Clone(u.Associations), func(a Association) bool { return !v.association(&a) })
	return u, true
}
