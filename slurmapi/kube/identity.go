package kube

import "fmt"

// UserIDs are the uid and gid a site maps a Slurm user to, as LDAP does.
type UserIDs struct {
	UID int64 `json:"uid"`
	GID int64 `json:"gid"`
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

// UserMap is how a site maps Slurm users to the numeric identity their job
// pods run as. A job runs as root only when the site maps its user to uid 0.
type UserMap struct {
	// Users maps a Slurm user to their uid and gid.
	Users map[string]UserIDs
	// Unmapped is what becomes of a user not in Users ("" is UnmappedRun).
	Unmapped Unmapped
	// Default is the identity of unmapped users' jobs (nil: NobodyIDs). It
	// is never root: Validate refuses uid 0.
	Default *UserIDs
}

// Validate reports a map that would run someone as root by default, or an
// unknown Unmapped.
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
	return nil
}

// MayRun reports whether user's jobs may run at all: mapped, or the site runs
// unmapped users as its default identity.
func (m UserMap) MayRun(user string) bool {
	_, ok := m.Users[user]
	return ok || m.Unmapped != UnmappedRefuse
}

// IDs is the identity user's job pods run as.
func (m UserMap) IDs(user string) (UserIDs, error) {
	if ids, ok := m.Users[user]; ok {
		return ids, nil
	}
	if m.Unmapped == UnmappedRefuse {
		return UserIDs{}, fmt.Errorf("user %q has no uid at this site (slurm.users) and slurm.unmappedUsers is %q", user, UnmappedRefuse)
	}
	if m.Default == nil {
		return NobodyIDs, nil
	}
	return *m.Default, nil
}
