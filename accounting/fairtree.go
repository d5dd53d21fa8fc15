package accounting

import (
	"fmt"
	"math"
	"sort"
)

// ShareAssoc defines one association of the fair-share tree: an account
// (User empty) under Parent ("" or "root" for the top), or a user under
// Account. Shares are RawShares.
type ShareAssoc struct {
	Account string
	Parent  string
	User    string
	Shares  uint32
}

// ShareRow is one line of sshare under Slurm's Fair Tree algorithm.
type ShareRow struct {
	Account      string  `json:"account"`
	User         string  `json:"user,omitempty"`
	Parent       string  `json:"parent,omitempty"`
	Depth        int     `json:"depth"` // root is 0
	RawShares    uint32  `json:"raw_shares"`
	NormShares   float64 `json:"norm_shares"`   // shares / shares of self and siblings
	RawUsage     float64 `json:"raw_usage"`     // decayed billing-seconds
	NormUsage    float64 `json:"norm_usage"`    // RawUsage / the cluster's
	EffectvUsage float64 `json:"effectv_usage"` // RawUsage / self and siblings'
	FairShare    float64 `json:"fair_share"`    // users only: rank / user count
	LevelFS      float64 `json:"level_fs"`      // NormShares / EffectvUsage; +Inf without usage
}

// IsUser reports whether the row is a user association.
func (r ShareRow) IsUser() bool { return r.User != "" }

type shareNode struct {
	row ShareRow
	// own is usage charged to an account by no user of it: Kubernetes
	// workloads, charged to their namespace's principal (ns:<namespace>).
	own      float64
	children []*shareNode
}

// FairTree computes every association's standing as Slurm's Fair Tree does:
// LevelFS = NormShares / EffectvUsage among siblings; then, walking the tree
// with siblings ordered by LevelFS (highest first), users are ranked, and a
// user's FairShare is rank / user count, so every user of an account that
// stands higher than a sibling account outranks every user of that sibling.
// Equal LevelFS values tie: tied users share a FairShare, tied accounts have
// their children ranked together.
//
// Users (and their accounts) that have usage but no association are added
// with one share, so no usage goes unaccounted. Usage of a Kubernetes
// workload (user ns:<namespace>, IsManifestUser) counts toward its account,
// whose RawUsage, EffectvUsage and LevelFS include it, but makes no user row:
// Slurm has no such user, and ranking it would move every real user's
// FairShare. Rows come in tree order: root, then each account's users, then
// its sub-accounts, by name.
func FairTree(assocs []ShareAssoc, u Usage) ([]ShareRow, error) {
	root, err := buildShareTree(assocs, u)
	if err != nil {
		return nil, err
	}
	sumUsage(root)
	levelFS(root, root.row.RawUsage)
	users := countUsers(root)
	rank, rnt := users, users
	rankSiblings(root.children, &rank, &rnt, users, false)
	var out []ShareRow
	var walk func(n *shareNode)
	walk = func(n *shareNode) {
		out = append(out, n.row)
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(root)
	return out, nil
}

func buildShareTree(assocs []ShareAssoc, u Usage) (*shareNode, error) {
	root := &shareNode{row: ShareRow{Account: "root", NormShares: 1}}
	accounts := map[string]*shareNode{"root": root}
	parents := map[string]string{}
	users := map[Assoc]*shareNode{}
	for _, a := range assocs {
		switch {
		case a.Account == "":
			return nil, fmt.Errorf("association with empty account")
		case a.User == "" && a.Account == "root":
			return nil, fmt.Errorf("account root is implicit and cannot be redefined")
		case a.User == "":
			if _, dup := accounts[a.Account]; dup {
				return nil, fmt.Errorf("account %s defined twice", a.Account)
			}
			accounts[a.Account] = &shareNode{row: ShareRow{Account: a.Account, RawShares: a.Shares}}
			parent := a.Parent
			if parent == "" {
				parent = "root"
			}
			parents[a.Account] = parent
		}
	}
	for name, parent := range parents {
		if _, ok := accounts[parent]; !ok {
			// As the scheduling core treats a queue whose parent is not defined: a
			// top-level account, so one misconfigured Queue does not take sshare down.
			parents[name] = "root"
		}
	}
	for name, parent := range parents {
		p := accounts[parent]
		for seen, up := 0, parent; up != "root"; up = parents[up] {
			if seen++; up == name || seen > len(parents) {
				return nil, fmt.Errorf("account %s is its own ancestor", name)
			}
		}
		n := accounts[name]
		n.row.Parent = parent
		p.children = append(p.children, n)
	}
	account := func(name string) *shareNode {
		acct, ok := accounts[name]
		if !ok {
			// Usage charged to an account nobody defined still counts.
			acct = &shareNode{row: ShareRow{Account: name, Parent: "root", RawShares: 1}}
			accounts[name] = acct
			root.children = append(root.children, acct)
		}
		return acct
	}
	addUser := func(acctName, user string, shares uint32) (*shareNode, error) {
		key := Assoc{Account: acctName, User: user}
		if _, dup := users[key]; dup {
			return nil, fmt.Errorf("user %s in account %s defined twice", user, acctName)
		}
		acct := account(acctName)
		n := &shareNode{row: ShareRow{Account: acctName, User: user, Parent: acctName, RawShares: shares}}
		users[key] = n
		acct.children = append(acct.children, n)
		return n, nil
	}
	for _, a := range assocs {
		if a.User == "" {
			continue
		}
		if _, err := addUser(a.Account, a.User, a.Shares); err != nil {
			return nil, err
		}
	}
	for key, t := range u.ByUser {
		if IsManifestUser(key.User) {
			account(key.Account).own += t[TRESBilling]
			continue
		}
		n := users[key]
		if n == nil {
			var err error
			if n, err = addUser(key.Account, key.User, 1); err != nil {
				return nil, err
			}
		}
		n.row.RawUsage = t[TRESBilling]
	}
	orderTree(root, 0)
	return root, nil
}

// orderTree sets depths and sorts children: users first, then accounts, by name.
func orderTree(n *shareNode, depth int) {
	n.row.Depth = depth
	sort.Slice(n.children, func(i, k int) bool {
		a, b := n.children[i].row, n.children[k].row
		if a.IsUser() != b.IsUser() {
			return a.IsUser()
		}
		if a.User != b.User {
			return a.User < b.User
		}
		return a.Account < b.Account
	})
	for _, c := range n.children {
		orderTree(c, depth+1)
	}
}

// sumUsage makes each account's RawUsage its own usage plus its children's.
func sumUsage(n *shareNode) float64 {
	if n.row.IsUser() {
		return n.row.RawUsage
	}
	n.row.RawUsage = n.own
	for _, c := range n.children {
		n.row.RawUsage += sumUsage(c)
	}
	return n.row.RawUsage
}

func levelFS(n *shareNode, total float64) {
	if n.row.Depth == 0 {
		n.row.EffectvUsage = 1
		n.row.NormUsage = 1
		if total == 0 {
			n.row.NormUsage = 0
		}
	}
	var shares float64
	for _, c := range n.children {
		shares += float64(c.row.RawShares)
	}
	for _, c := range n.children {
		r := &c.row
		if shares > 0 {
			r.NormShares = float64(r.RawShares) / shares
		}
		if n.row.RawUsage > 0 {
			r.EffectvUsage = r.RawUsage / n.row.RawUsage
		}
		if total > 0 {
			r.NormUsage = r.RawUsage / total
		}
		switch {
		case r.RawShares == 0:
			r.LevelFS = 0
		case r.EffectvUsage == 0:
			r.LevelFS = math.Inf(1)
		default:
			r.LevelFS = r.NormShares / r.EffectvUsage
		}
		levelFS(c, total)
	}
}

func countUsers(n *shareNode) int {
	if n.row.IsUser() {
		return 1
	}
	c := 0
	for _, k := range n.children {
		c += countUsers(k)
	}
	return c
}

// rankSiblings assigns FairShare to users in LevelFS order; rank counts down
// from the number of users, rnt is the rank a tie shares.
func rankSiblings(sibs []*shareNode, rank, rnt *int, users int, accountTied bool) {
	sorted := append([]*shareNode(nil), sibs...)
	sort.SliceStable(sorted, func(i, k int) bool { return sorted[i].row.LevelFS > sorted[k].row.LevelFS })
	for i := 0; i < len(sorted); i++ {
		n := sorted[i]
		tied := accountTied
		if i > 0 {
			tied = sorted[i-1].row.LevelFS == n.row.LevelFS
		}
		if n.row.IsUser() {
			if !tied {
				*rnt = *rank
			}
			n.row.FairShare = float64(*rnt) / float64(users)
			*rank--
			continue
		}
		// Accounts with the same LevelFS are one level: rank their children together.
		children := append([]*shareNode(nil), n.children...)
		for i+1 < len(sorted) && !sorted[i+1].row.IsUser() && sorted[i+1].row.LevelFS == n.row.LevelFS {
			i++
			children = append(children, sorted[i].children...)
		}
		rankSiblings(children, rank, rnt, users, tied)
	}
}
