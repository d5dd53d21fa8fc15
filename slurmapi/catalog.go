package slurmapi

import (
	"slices"
	"strings"
)

// Catalog is a snapshot of what a submission may name: partitions,
// accounts, QOS and which users belong to which accounts. The Kubernetes
// side builds it from its informer caches (Partition, Queue, QOS objects);
// validation only reads it, so one snapshot may serve many requests.
type Catalog struct {
	Partitions map[string]*Partition
	// DefaultPartition is used when a job names none; "" means the job
	// must name one.
	DefaultPartition string
	Accounts         map[string]*Account
	QOS              map[string]*QOS
	// UserAccounts lists, per user, the accounts the user is associated
	// with.
	UserAccounts map[string][]string
	// DefaultAccount is, per user, the account of jobs that name none.
	DefaultAccount map[string]string
	// AccountQOS lists the QOS an account's users may use (Slurm's
	// association QOS). An account missing here may use any QOS.
	AccountQOS map[string][]string
	// DefaultQOS is, per account, the QOS of jobs that name none (Slurm's
	// DefaultQOS); an account missing here defaults to the QOS named
	// normal, as Slurm's default association does, if the site has one.
	DefaultQOS map[string]string
	// Reservations are the advance reservations a job may name (--reservation), by name.
	Reservations map[string]*Reservation
}

// fallbackQOS is Slurm's default QOS, used where no association names one.
const fallbackQOS = "normal"

// userInAccount reports whether user may submit to account: only through
// an association, as with Slurm's AccountingStorageEnforce=associations.
func (c *Catalog) userInAccount(user, account string) bool {
	return slices.Contains(c.UserAccounts[user], account)
}

// defaultQOS is the QOS of account's jobs that name none, or "".
func (c *Catalog) defaultQOS(account string) string {
	if q := c.DefaultQOS[account]; q != "" {
		return q
	}
	if _, ok := c.QOS[fallbackQOS]; ok {
		return fallbackQOS
	}
	return ""
}

// defaultAccount is the user's default account, or "".
func (c *Catalog) defaultAccount(user string) string { return c.DefaultAccount[user] }

// gpuTypeMatches reports whether a requested GPU type ("h100") names the
// partition's GPU model ("H100-80GB", "NVIDIA-H100-80GB-HBM3"): equal, or
// one of the model's dash-, underscore- or space-separated words, ignoring
// case. "h100" does not match "GH100".
func gpuTypeMatches(requested, model string) bool {
	if strings.EqualFold(requested, model) {
		return true
	}
	for _, word := range strings.FieldsFunc(model, func(r rune) bool { return r == '-' || r == '_' || r == ' ' }) {
		if strings.EqualFold(word, requested) {
			return true
		}
	}
	return false
}
