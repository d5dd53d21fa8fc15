package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// sacctmgrChange is one `sacctmgr add|modify|delete ENTITY ...` command as
// Slurm's sacctmgr takes it: bare words and name= name the entities
// (comma-separated lists allowed), `where` starts conditions and `set`
// starts the values to change; add takes its values without `set`.
type sacctmgrChange struct {
	verb   string // add, modify, delete
	entity string // account, user, qos
	names  []string
	where  map[string]string // lower-cased keys other than name
	set    map[string]string // lower-cased keys
}

// sacctmgrSettable lists, per verb and entity, the keys Sluice can change
// (an account is a Queue, a QOS a QOS object); anything else is refused
// before a request is sent, so nothing is half applied.
var sacctmgrSettable = map[string][]string{
	"add account":    {"description", "organization", "parent"},
	"add user":       {"account", "defaultaccount"},
	"add qos":        {"description", "priority", "usagefactor", "preemptmode"},
	"modify account": {"parent", "qos", "defaultqos"},
	"modify qos":     {"description", "priority", "usagefactor", "preemptmode"},
	"delete account": {},
	"delete qos":     {},
}

func parseSacctmgrChange(args []string) (sacctmgrChange, error) {
	if len(args) < 2 {
		return sacctmgrChange{}, UsageError{"usage: sacctmgr add|modify|delete account|user|qos NAME [where ...] [set KEY=VALUE ...]"}
	}
	ch := sacctmgrChange{verb: strings.ToLower(args[0]), where: map[string]string{}, set: map[string]string{}}
	switch ch.verb {
	case "create":
		ch.verb = "add"
	case "update":
		ch.verb = "modify"
	case "remove":
		ch.verb = "delete"
	}
	switch e := strings.ToLower(args[1]); {
	case strings.HasPrefix(e, "acc"):
		ch.entity = "account"
	case e == "user" || e == "users":
		ch.entity = "user"
	case e == "qos":
		ch.entity = "qos"
	default:
		return ch, UsageError{fmt.Sprintf("sacctmgr %s: unknown entity %q (account, user, qos)", ch.verb, args[1])}
	}
	allowed, ok := sacctmgrSettable[ch.verb+" "+ch.entity]
	if !ok {
		return ch, UsageError{fmt.Sprintf("sacctmgr %s %s is not supported: %s", ch.verb, ch.entity, sacctmgrWhyNot(ch.verb, ch.entity))}
	}
	mode := "where"
	if ch.verb == "add" {
		mode = "set"
	}
	for _, a := range args[2:] {
		switch strings.ToLower(a) {
		case "where":
			mode = "where"
			continue
		case "set":
			if ch.verb != "modify" {
				return ch, UsageError{fmt.Sprintf("sacctmgr %s: 'set' is only for modify", ch.verb)}
			}
			mode = "set"
			continue
		}
		key, value, hasValue := strings.Cut(a, "=")
		key = strings.ToLower(key)
		switch {
		case !hasValue || key == "name" || key == "names":
			if !hasValue {
				value = a
			}
			for n := range strings.SplitSeq(value, ",") {
				if n != "" {
					ch.names = append(ch.names, n)
				}
			}
		case mode == "where":
			ch.where[key] = value
		default:
			if !slices.Contains(allowed, key) {
				return ch, UsageError{fmt.Sprintf("sacctmgr %s %s: %s cannot be set here (allowed: %s)", ch.verb, ch.entity, key, strings.Join(allowed, ", "))}
			}
			ch.set[key] = value
		}
	}
	for k := range ch.where {
		return ch, UsageError{fmt.Sprintf("sacctmgr %s %s: only name= can select here, not %s=", ch.verb, ch.entity, k)}
	}
	if len(ch.names) == 0 {
		return ch, UsageError{fmt.Sprintf("sacctmgr %s %s: name which %s (for example: sacctmgr %s %s NAME)", ch.verb, ch.entity, ch.entity, ch.verb, ch.entity)}
	}
	switch {
	case ch.verb == "modify" && len(ch.set) == 0:
		return ch, UsageError{fmt.Sprintf("sacctmgr modify %s: nothing to set (set KEY=VALUE)", ch.entity)}
	case ch.verb == "add" && ch.entity == "user" && ch.set["account"] == "":
		return ch, UsageError{"sacctmgr add user: Account= is required (a user exists through an association with an account)"}
	}
	return ch, nil
}

// sacctmgrWhyNot says what to do instead of a change Sluice does not serve.
func sacctmgrWhyNot(verb, entity string) string {
	switch {
	case entity == "user" && verb == "delete":
		return "remove the user from the account's Queue (spec.users) with kubectl"
	case entity == "user":
		return "a user's associations are added with 'sacctmgr add user NAME Account=ACCOUNT'"
	}
	return "use add, modify or delete"
}

// runSacctmgrChange shows what the change does and, once confirmed (or at
// once with -i, as sacctmgr's --immediate), sends it.
func runSacctmgrChange(ctx context.Context, c *client.Client, ch sacctmgrChange, immediate bool, stdin io.Reader, stdout io.Writer) error {
	describeSacctmgrChange(stdout, ch)
	if !immediate {
		fmt.Fprint(stdout, "Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): ")
		if !confirmed(stdin, 30*time.Second) {
			fmt.Fprintln(stdout, " Changes Discarded")
			return nil
		}
	}
	return applySacctmgrChange(ctx, c, ch)
}

func describeSacctmgrChange(w io.Writer, ch sacctmgrChange) {
	title := map[string]string{"add": " Adding", "modify": " Modified", "delete": " Deleting"}[ch.verb]
	what := map[string]string{"account": "Account(s)", "user": "User(s)", "qos": "QOS(s)"}[ch.entity]
	fmt.Fprintf(w, "%s %s\n", title, what)
	for _, n := range ch.names {
		fmt.Fprintf(w, "  %s\n", n)
	}
	if len(ch.set) == 0 {
		return
	}
	fmt.Fprintln(w, " Settings")
	keys := make([]string, 0, len(ch.set))
	for k := range ch.set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-15s = %s\n", k, ch.set[k])
	}
}

// confirmed reads one answer; only y or yes commits, as in sacctmgr.
func confirmed(stdin io.Reader, wait time.Duration) bool {
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		answer <- strings.ToLower(strings.TrimSpace(line))
	}()
	select {
	case a := <-answer:
		return a == "y" || a == "yes"
	case <-time.After(wait):
		return false
	}
}

func applySacctmgrChange(ctx context.Context, c *client.Client, ch sacctmgrChange) error {
	switch ch.verb + " " + ch.entity {
	case "add account":
		accounts := make([]client.AccountChange, len(ch.names))
		for i, n := range ch.names {
			accounts[i] = client.AccountChange{Name: n, Description: ch.set["description"], Organization: ch.set["organization"]}
		}
		if err := c.AddAccounts(ctx, accounts); err != nil {
			return err
		}
		if ch.set["parent"] == "" {
			return nil
		}
		return c.SetAssociations(ctx, accountAssociations(ch))
	case "modify account":
		return c.SetAssociations(ctx, accountAssociations(ch))
	case "add user":
		assocs := make([]client.AssociationChange, len(ch.names))
		for i, n := range ch.names {
			assocs[i] = client.AssociationChange{Account: ch.set["account"], User: n,
				IsDefault: ch.set["defaultaccount"] == "" || ch.set["defaultaccount"] == ch.set["account"]}
		}
		return c.SetAssociations(ctx, assocs)
	case "add qos", "modify qos":
		return setQOS(ctx, c, ch)
	case "delete account":
		for _, n := range ch.names {
			if err := c.DeleteAccount(ctx, n); err != nil {
				return err
			}
		}
	case "delete qos":
		for _, n := range ch.names {
			if err := c.DeleteQOS(ctx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// accountAssociations is the account-level association (no user) that
// carries an account's parent and QOS.
func accountAssociations(ch sacctmgrChange) []client.AssociationChange {
	out := make([]client.AssociationChange, len(ch.names))
	for i, n := range ch.names {
		out[i] = client.AssociationChange{Account: n, Parent: ch.set["parent"]}
		if q, ok := ch.set["qos"]; ok {
			out[i].QOS = strings.Split(q, ",")
		}
		out[i].Default.QOS = ch.set["defaultqos"]
	}
	return out
}

// setQOS writes each named QOS whole: a modify starts from the QOS as the
// server has it, so what the command does not set stays as it was.
func setQOS(ctx context.Context, c *client.Client, ch sacctmgrChange) error {
	var current []client.QOS
	if ch.verb == "modify" {
		var err error
		if current, err = c.QOSList(ctx); err != nil {
			return err
		}
	}
	list := make([]client.QOSChange, len(ch.names))
	for i, n := range ch.names {
		q := client.QOSChange{Name: n}
		if ch.verb == "modify" {
			at := slices.IndexFunc(current, func(x client.QOS) bool { return x.Name == n })
			if at < 0 {
				return fmt.Errorf("sacctmgr modify qos: QOS %q does not exist", n)
			}
			q = qosChangeOf(current[at])
		}
		if err := applyQOSSettings(&q, ch.set); err != nil {
			return err
		}
		list[i] = q
	}
	return c.SetQOS(ctx, list)
}

func qosChangeOf(q client.QOS) client.QOSChange {
	out := client.QOSChange{Name: q.Name, Description: q.Description, Priority: q.Priority}
	if q.UsageFactor.Set && !q.UsageFactor.Infinite {
		f := q.UsageFactor
		out.UsageFactor = &f
	}
	out.Preempt.Mode = q.Preempt.Mode
	return out
}

func applyQOSSettings(q *client.QOSChange, set map[string]string) error {
	for k, v := range set {
		switch k {
		case "description":
			q.Description = v
		case "priority":
			p, err := strconv.ParseInt(v, 10, 32)
			if err != nil || p < 0 {
				return UsageError{fmt.Sprintf("sacctmgr: Priority=%q is not a number of 0 or more", v)}
			}
			q.Priority = client.Set(p)
		case "usagefactor":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return UsageError{fmt.Sprintf("sacctmgr: UsageFactor=%q is not a number of 0 or more", v)}
			}
			q.UsageFactor = &client.FloatNoVal{Set: true, Number: f}
		case "preemptmode":
			switch m := strings.ToUpper(v); m {
			case "REQUEUE", "CANCEL", "OFF":
				q.Preempt.Mode = []string{m}
			default:
				return UsageError{fmt.Sprintf("sacctmgr: PreemptMode=%q is not supported (requeue, cancel or off)", v)}
			}
		}
	}
	return nil
}
