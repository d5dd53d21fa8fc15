package serverconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/slurmapi"
)

// rest.privateData's values: those of Slurm's PrivateData that Sluice keeps.
// What each hides is slurmapi's (auth.go, auth_private.go).
const (
	privateJobs     = "jobs"
	privateAccounts = "accounts"
	privateUsage    = "usage"
	privateUsers    = "users"
)

// privateDataSupported lists them in the order the docs give them.
var privateDataSupported = []string{privateJobs, privateAccounts, privateUsage, privateUsers}

// privateDataElsewhere are Slurm's other PrivateData values. They name data
// Sluice shows everyone alike (nodes, partitions) or does not keep
// (reservations, events, cloud nodes); a site asking for one is told so at
// start rather than given a setting that changes nothing.
var privateDataElsewhere = []string{"nodes", "partitions", "reservations", "events", "cloud"}

// validPrivateData refuses values Sluice does not keep, naming those it does.
func validPrivateData(values []string) error {
	supported := strings.Join(privateDataSupported, ", ")
	for _, v := range values {
		switch {
		case slices.Contains(privateDataSupported, v):
		case slices.Contains(privateDataElsewhere, v):
			return fmt.Errorf("rest.privateData %q: Slurm's PrivateData=%s is not implemented by Sluice; supported: %s", v, v, supported)
		default:
			return fmt.Errorf("rest.privateData %q: not one of Slurm's PrivateData values Sluice keeps; supported: %s", v, supported)
		}
	}
	return nil
}

// ApplyPrivateData sets auth's PrivateData from the configuration.
func (r RESTConfig) ApplyPrivateData(auth *slurmapi.AuthConfig) {
	auth.PrivateJobs = slices.Contains(r.PrivateData, privateJobs)
	auth.PrivateAccounts = slices.Contains(r.PrivateData, privateAccounts)
	auth.PrivateUsage = slices.Contains(r.PrivateData, privateUsage)
	auth.PrivateUsers = slices.Contains(r.PrivateData, privateUsers)
}
