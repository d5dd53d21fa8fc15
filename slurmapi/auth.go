package slurmapi

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// Role is what an authenticated user may do.
type Role int

// Roles in increasing power. Coordinators act on their accounts' jobs;
// operators and administrators on everything (Slurm's AdminLevel).
const (
	RoleUser Role = iota
	RoleCoordinator
	RoleOperator
	RoleAdmin
)

// AuthConfig lists who holds which role. Nothing is hard-coded: a site
// names its operators and admins and the accounts each coordinator runs.
type AuthConfig struct {
	Key          []byte              // HS256 key (LoadOrCreateKey)
	Operators    []string            // may see and change every job
	Admins       []string            // operators who may also change accounts and QOS
	Coordinators map[string][]string // user -> accounts they coordinate
	// SlurmUser is the site's SlurmUser ("slurm" in Debian's packages): an
	// administrator, as root always is, so a fresh site has one.
	SlurmUser string
	// PrivateJobs is Slurm's PrivateData=jobs: users see only their own jobs
	// (coordinators also their accounts'). Without it, as Slurm's default, every
	// user sees every job; changing one still takes CanAccessJob.
	PrivateJobs bool
	// PrivateAccounts, PrivateUsage and PrivateUsers are Slurm's PrivateData=
	// accounts, usage and users; what each hides is in auth_private.go. Without
	// them, as Slurm's default, every user reads every account, user record and
	// usage figure.
	PrivateAccounts, PrivateUsage, PrivateUsers bool

	verified *tokenCache // set by NewServer
}

// Identity is the authenticated caller.
type Identity struct {
	User     string
	Role     Role
	accounts []string // coordinated accounts
	allJobs  bool     // may see every job (no PrivateData=jobs)
	private  privacy  // the site's other PrivateData (auth_private.go)
}

// Authenticate reads the token from X-SLURM-USER-TOKEN (with an optional
// X-SLURM-USER-NAME) or from Authorization: Bearer, as slurmrestd's
// auth/jwt does, and returns the caller. A user-name header that differs
// from the token's user is acting as that user, allowed only to admins
// (slurmrestd allows it only for SlurmUser and root): the request then has
// the named user's rights, never the admin's.
func (c *AuthConfig) Authenticate(r *http.Request, now time.Time) (Identity, *Error) {
	slurmToken := r.Header.Get("X-SLURM-USER-TOKEN")
	userName := r.Header.Get("X-SLURM-USER-NAME")
	bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token := slurmToken
	switch {
	case slurmToken != "" && hasBearer:
		return Identity{}, unauthorized("both X-SLURM-USER-TOKEN and Authorization: Bearer given; send one")
	case hasBearer:
		token = strings.TrimSpace(bearer)
	case token == "":
		return Identity{}, unauthorized("no token: set X-SLURM-USER-TOKEN or Authorization: Bearer (mint one with `sluice token`)")
	}
	claims, err := c.verified.verify(c.Key, token, now)
	if err != nil {
		return Identity{}, unauthorized("%v", err)
	}
	id := c.identity(claims.User)
	if userName != "" && userName != claims.User {
		if err := ValidUserName(userName); err != nil {
			return Identity{}, unauthorized("X-SLURM-USER-NAME: %v", err)
		}
		if id.Role < RoleAdmin {
			return Identity{}, unauthorized("X-SLURM-USER-NAME %q does not match the token's user %q; only administrators may act as another user", userName, claims.User)
		}
		id = c.identity(userName)
	}
	return id, nil
}

func unauthorized(format string, args ...any) *Error {
	return Errorf(http.StatusUnauthorized, ErrRestAuthFail, "authentication", format, args...)
}

// rootUser is an administrator on every site, as in Slurm.
const rootUser = "root"

func (c *AuthConfig) identity(user string) Identity {
	id := Identity{User: user, Role: RoleUser, accounts: c.Coordinators[user], allJobs: !c.PrivateJobs,
		private: privacy{accounts: c.PrivateAccounts, usage: c.PrivateUsage, users: c.PrivateUsers}}
	switch {
	case user == rootUser || (c.SlurmUser != "" && user == c.SlurmUser) || slices.Contains(c.Admins, user):
		id.Role = RoleAdmin
	case slices.Contains(c.Operators, user):
		id.Role = RoleOperator
	case len(id.accounts) > 0:
		id.Role = RoleCoordinator
	}
	return id
}

// CanAccessJob reports whether the caller may see and change a job of
// owner charged to account.
func (id Identity) CanAccessJob(owner, account string) bool {
	switch {
	case id.Role >= RoleOperator, id.User == owner:
		return true
	case id.Role == RoleCoordinator:
		return slices.Contains(id.accounts, account)
	}
	return false
}

// CanSeeJob reports whether the caller may read a job of owner charged to account:
// any job, unless the site keeps jobs private (PrivateData=jobs); then only those
// it may access.
func (id Identity) CanSeeJob(owner, account string) bool {
	return id.allJobs || id.CanAccessJob(owner, account)
}

// seesOnlyOwnJobs reports whether the caller's job listings are narrowed to its own
// user before the backend is asked.
func (id Identity) seesOnlyOwnJobs() bool { return id.Role == RoleUser && !id.allJobs }

// CanAdminister reports whether the caller may change accounts, users,
// associations and QOS (sacctmgr writes).
func (id Identity) CanAdminister() bool { return id.Role >= RoleAdmin }

// IsOperator reports whether the caller sees everything.
func (id Identity) IsOperator() bool { return id.Role >= RoleOperator }
