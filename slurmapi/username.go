package slurmapi

import (
	"fmt"
	"strings"
	"unicode"
)

// maxUserName bounds a user name. Linux login names stop at 32 bytes; directory
// services (LDAP, Active Directory's user@domain) allow longer ones, so the cap
// only keeps a name to something a table and a log line can hold.
const maxUserName = 255

// ValidUserName says why name cannot be a Slurm user, or nil. A token, an
// X-SLURM-USER-NAME header and sacctmgr's users are held to it, so the names
// Sluice gives principals that are not Slurm users (a manifest workload's
// "ns:<namespace>", v1alpha1.ManifestUser) can never be claimed by a token:
// ':' is /etc/passwd's field separator, and no POSIX user name holds it.
func ValidUserName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("user name is empty")
	case len(name) > maxUserName:
		return fmt.Errorf("user name is %d bytes long; at most %d are allowed", len(name), maxUserName)
	case strings.ContainsAny(name, ":/"):
		return fmt.Errorf("user name %q holds ':' or '/', which no Slurm user name may (names such as ns:<namespace> stand for Kubernetes namespaces)", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("user name %q holds white space or a control character", name)
	}
	return nil
}
