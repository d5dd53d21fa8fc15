package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
)

// UserIDs is the identity a site maps a Slurm user to, as passwd/group or
// LDAP give it: what the user's job pods run as.
type UserIDs struct {
	UID int64 `json:"uid"`
	GID int64 `json:"gid"`
	// Groups are the supplementary gids (the pods' supplementalGroups),
	// the primary among them; nil: the primary group only.
	Groups []int64 `json:"groups,omitempty"`
	// Home is the home directory (the jobs' HOME); "" when the site gives
	// none.
	Home string `json:"home,omitempty"`
}

// withPrimary is ids with its primary gid among its groups, the groups
// sorted and each once, as id(1) lists them.
func (ids UserIDs) withPrimary() UserIDs {
	groups := append([]int64{ids.GID}, ids.Groups...)
	slices.Sort(groups)
	ids.Groups = slices.Compact(groups)
	return ids
}

// NobodyIDs is the identity of users the site maps to none (nobody and
// nogroup on most distributions): never root, owning no one's files.
var NobodyIDs = UserIDs{UID: 65534, GID: 65534}

// Unmapped is what becomes of a Slurm user the site maps to no uid.
type Unmapped string

const (
	// UnmappedRun runs the user's jobs as the site's default non-root identity.
	UnmappedRun Unmapped = "run"
	// UnmappedRefuse refuses the user's jobs at submit.
	UnmappedRefuse Unmapped = "refuse"
)

// IdentitySource is one place a site keeps its users' identities: the
// passwd and group files (PasswdFiles), an LDAP directory (LDAPDirectory).
type IdentitySource interface {
	// Lookup is user's identity: an error wrapping ErrUnknownUser when the
	// source has no such user, another error when it could not answer
	// (unreachable, unreadable, malformed), saying so.
	Lookup(ctx context.Context, user string) (UserIDs, error)
	// String names the source in errors ("passwd file /etc/sluice/passwd").
	String() string
}

var (
	// ErrUnknownUser is a user no identity source knows (worded to follow
	// the user's name).
	ErrUnknownUser = errors.New("has no uid at this site")
	// ErrIdentityUnavailable is an identity source that could not answer:
	// the same lookup may succeed later, so a job start is retried and a
	// submission answered "try again", never taken as an unknown user.
	ErrIdentityUnavailable = errors.New("the site's identity source could not answer")
)

// identityRetry is the Retry-After of a submission refused because an
// identity source could not answer.
const identityRetry = 10 * time.Second

// UserMap is how a site maps Slurm users to the identity their job pods run
// as: the inline Users first, then each of Sources in order; a user none
// knows is Unmapped. A job runs as root only when Users maps its user to
// uid 0: a source's uid 0 (a site's real /etc/passwd lists root) maps no one.
// Copies share their sources (and so the sources' caches).
type UserMap struct {
	// Users maps a Slurm user to their identity (slurm.users).
	Users map[string]UserIDs
	// Sources are asked in order for users not in Users.
	Sources []IdentitySource
	// Unmapped is what becomes of a user no one maps ("" is UnmappedRun).
	Unmapped Unmapped
	// Default is the identity of unmapped users' jobs (nil: NobodyIDs). It
	// is never root: Validate refuses uid 0.
	Default *UserIDs
}

// Validate reports a map that would run someone as root by default, an
// unknown Unmapped, or an inline identity no pod could run as.
func (m UserMap) Validate() error {
	switch m.Unmapped {
	case "", UnmappedRun, UnmappedRefuse:
	default:
		return fmt.Errorf("unmapped users %q: want %q or %q", m.Unmapped, UnmappedRun, UnmappedRefuse)
	}
	if d := m.Default; d != nil && d.UID <= 0 {
		return fmt.Errorf("default user uid %d: want a non-root uid (above 0); map a user to uid 0 by name if it must run as root", d.UID)
	}
	if d := m.Default; d != nil && d.GID < 0 {
		return fmt.Errorf("default user gid %d: want 0 or more", d.GID)
	}
	for name, ids := range m.Users {
		if ids.UID < 0 || ids.GID < 0 || slices.ContainsFunc(ids.Groups, func(g int64) bool { return g < 0 }) {
			return fmt.Errorf("user %s: uid, gid and groups must be 0 or more", name)
		}
		if ids.Home != "" && !strings.HasPrefix(ids.Home, "/") {
			return fmt.Errorf("user %s: home %q: want an absolute path", name, ids.Home)
		}
	}
	return nil
}

// Lookup is the identity user's job pods run as. Its error wraps
// ErrUnknownUser when the site refuses users it maps to no one and no one
// maps user, or ErrIdentityUnavailable when a source could not answer
// (the sources after it are not asked: the one that failed may map user).
func (m UserMap) Lookup(ctx context.Context, user string) (UserIDs, error) {
	if ids, ok := m.Users[user]; ok {
		return ids.withPrimary(), nil
	}
	for _, src := range m.Sources {
		ids, err := src.Lookup(ctx, user)
		switch {
		case errors.Is(err, ErrUnknownUser):
			continue
		case err != nil:
			return UserIDs{}, fmt.Errorf("%w: user %s: %w", ErrIdentityUnavailable, user, err)
		case ids.UID == 0:
			continue
		}
		return ids.withPrimary(), nil
	}
	if m.Unmapped == UnmappedRefuse {
		return UserIDs{}, fmt.Errorf("user %q %w and slurm.unmappedUsers is %q: %s",
			user, ErrUnknownUser, UnmappedRefuse, m.whereToMap())
	}
	if m.Default == nil {
		return NobodyIDs, nil
	}
	return *m.Default, nil
}

// whereToMap tells an administrator where this site maps users.
func (m UserMap) whereToMap() string {
	if len(m.Sources) == 0 {
		return "map the user in slurm.users, or give the site's passwd and group files or LDAP directory " +
			"(slurm.identity), or set slurm.unmappedUsers: run to run such users as slurm.defaultUser"
	}
	where := []string{"slurm.users"}
	for _, src := range m.Sources {
		where = append(where, src.String())
	}
	return fmt.Sprintf("map the user in %s, or set slurm.unmappedUsers: run to run such users as slurm.defaultUser", strings.Join(where, ", "))
}

// CheckSubmitter is the REST API's check of a submission by user
// (slurmapi.SubmitPolicy.CheckUser): nil when user's jobs may run; 403
// "Invalid user id" (2010) when the site refuses users it maps to no one
// and no one maps user; 503 with Retry-After when an identity source could
// not answer, since the same submission may succeed shortly. Nothing is
// submitted either way.
func (m UserMap) CheckSubmitter(ctx context.Context, user string) *slurmapi.Error {
	_, err := m.Lookup(ctx, user)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnknownUser):
		return slurmapi.Errorf(http.StatusForbidden, slurmapi.ErrUserIDMissing, "user",
			"user %s has no uid at this site and users without one may not run jobs: ask an administrator to %s", user, m.whereToMap())
	default:
		e := slurmapi.Errorf(http.StatusServiceUnavailable, slurmapi.ErrUserIDMissing, "user",
			"user %s's identity could not be looked up, nothing was submitted; try again shortly (%v)", user, err)
		e.RetryAfter = identityRetry
		return e
	}
}
