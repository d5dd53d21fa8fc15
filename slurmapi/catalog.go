package slurmapi

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
	// with; the first is the default account.
	UserAccounts map[string][]string
	// AccountQOS lists the QOS an account's users may use, the first
	// being the default. An account missing here may use any QOS.
	AccountQOS map[string][]string
}

// userInAccount reports whether user is associated with account.
func (c *Catalog) userInAccount(user, account string) bool {
	for _, a := range c.UserAccounts[user] {
		if a == account {
			return true
		}
	}
	return false
}

// defaultAccount is the user's default account, or "".
func (c *Catalog) defaultAccount(user string) string {
	if accts := c.UserAccounts[user]; len(accts) > 0 {
		return accts[0]
	}
	return ""
}
