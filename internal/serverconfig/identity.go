package serverconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/slurmapi/kube"
)

// IdentityConfig is where a site's users' identities are beyond
// slurm.users, asked in this order: the passwd and group files, then LDAP.
type IdentityConfig struct {
	// PasswdFile and GroupFile are /etc/passwd and /etc/group-form files (a
	// ConfigMap mounted into the server), read again when they change.
	PasswdFile string `yaml:"passwdFile"`
	GroupFile  string `yaml:"groupFile"`
	// LDAP is the site's directory; none while its URL is empty.
	LDAP LDAPConfig `yaml:"ldap"`
}

// LDAPConfig is slurm.identity.ldap (kube.LDAPOptions); an empty URL is no
// directory, whatever else is set (the chart lists every field).
type LDAPConfig struct {
	URL              string   `yaml:"url"`
	BindDN           string   `yaml:"bindDN"`
	BindPasswordFile string   `yaml:"bindPasswordFile"`
	CAFile           string   `yaml:"caFile"`
	UserBase         string   `yaml:"userBase"`
	UserFilter       string   `yaml:"userFilter"`
	GroupBase        string   `yaml:"groupBase"`
	GroupFilter      string   `yaml:"groupFilter"`
	CacheTTL         Duration `yaml:"cacheTTL"`
	Timeout          Duration `yaml:"timeout"`
}

func (l LDAPConfig) options() kube.LDAPOptions {
	return kube.LDAPOptions{URL: l.URL, BindDN: l.BindDN, BindPasswordFile: l.BindPasswordFile, CAFile: l.CAFile,
		UserBase: l.UserBase, UserFilter: l.UserFilter, GroupBase: l.GroupBase, GroupFilter: l.GroupFilter,
		CacheTTL: time.Duration(l.CacheTTL), Timeout: time.Duration(l.Timeout)}
}

// inlineUserMap is the Slurm section's users and what becomes of the
// unmapped ones, without the identity sources (it reads no file).
func (s SlurmConfig) inlineUserMap() kube.UserMap {
	users := map[string]kube.UserIDs{}
	for name, u := range s.Users {
		users[name] = kube.UserIDs{UID: u.UID, GID: u.GID, Groups: u.Groups, Home: u.Home}
	}
	return kube.UserMap{Users: users, Unmapped: kube.Unmapped(s.UnmappedUsers),
		Default: &kube.UserIDs{UID: s.DefaultUser.UID, GID: s.DefaultUser.GID}}
}

// validateIdentity reports users and identity sources that cannot work,
// without reading the files or asking the directory (the server does, as
// it starts: userMap).
func (s SlurmConfig) validateIdentity() error {
	if err := s.inlineUserMap().Validate(); err != nil {
		return err
	}
	id := s.Identity
	for name, path := range map[string]string{"passwdFile": id.PasswdFile, "groupFile": id.GroupFile} {
		if path != "" && !filepath.IsAbs(path) {
			return fmt.Errorf("identity.%s %q: want an absolute path", name, path)
		}
	}
	if id.GroupFile != "" && id.PasswdFile == "" {
		return errors.New("identity.groupFile needs identity.passwdFile: the passwd file maps users to uids, the group file only adds their groups")
	}
	if id.LDAP.URL != "" {
		if err := id.LDAP.options().Validate(); err != nil {
			return fmt.Errorf("identity.ldap: %w", err)
		}
	}
	return nil
}

// UserMap is how the pod factory and the REST API map Slurm users, one
// value they share (and so one LDAP cache): slurm.users, then the passwd
// and group files (read now: a malformed line stops the server, naming
// it), then LDAP.
func (s SlurmConfig) UserMap() (kube.UserMap, error) {
	m := s.inlineUserMap()
	id := s.Identity
	if id.PasswdFile != "" {
		files, err := kube.NewPasswdFiles(id.PasswdFile, id.GroupFile)
		if err != nil {
			return kube.UserMap{}, fmt.Errorf("slurm.identity: %w", err)
		}
		m.Sources = append(m.Sources, files)
	}
	if id.LDAP.URL != "" {
		dir, err := kube.NewLDAPDirectory(id.LDAP.options())
		if err != nil {
			return kube.UserMap{}, fmt.Errorf("slurm.identity.ldap: %w", err)
		}
		m.Sources = append(m.Sources, dir)
	}
	return m, nil
}
