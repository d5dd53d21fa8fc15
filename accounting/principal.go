package accounting

import "strings"

// ManifestUserPrefix starts the principal a Kubernetes workload is charged to:
// "ns:" and its namespace. It is v1alpha1.ManifestUserPrefix (a test holds the
// two equal); the ledger's core does not import the Kubernetes API for one
// string.
const ManifestUserPrefix = "ns:"

// IsManifestUser reports whether user is a namespace's principal rather than
// a Slurm user: no Slurm user name holds a ':'.
func IsManifestUser(user string) bool { return strings.HasPrefix(user, ManifestUserPrefix) }
