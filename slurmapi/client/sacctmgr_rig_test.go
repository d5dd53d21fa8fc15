package client_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// TestSacctmgrChangesOnRig: what `sacctmgr add/modify/delete` sends, as an
// administrator, changes what sacctmgr show reads back; a plain user is
// refused and changes nothing.
func TestSacctmgrChangesOnRig(t *testing.T) {
	ts := siteServer(t)
	root, alice := as(t, ts, "root"), as(t, ts, "alice")
	ctx := context.Background()

	if err := alice.AddAccounts(ctx, []client.AccountChange{{Name: "mallory"}}); !client.IsForbidden(err) {
		t.Errorf("alice adding an account: %v, want 403", err)
	}
	if err := root.AddAccounts(ctx, []client.AccountChange{{Name: "physics"}}); err != nil {
		t.Fatal(err)
	}
	if err := root.SetAssociations(ctx, []client.AssociationChange{{Account: "physics", Parent: "research"}, {Account: "physics", User: "carol", IsDefault: true}}); err != nil {
		t.Fatal(err)
	}
	assocs, err := root.Associations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(assocs, func(a client.Association) bool { return a.Account == "physics" && a.User == "carol" }) ||
		!slices.ContainsFunc(assocs, func(a client.Association) bool {
			return a.Account == "physics" && a.User == "" && a.Parent == "research"
		}) {
		t.Errorf("associations after add account physics Parent=research and add user carol: %+v", assocs)
	}

	two := client.FloatNoVal{Set: true, Number: 2}
	if err := root.SetQOS(ctx, []client.QOSChange{{Name: "burst", Priority: client.Set(5), UsageFactor: &two}}); err != nil {
		t.Fatal(err)
	}
	// modify sends the QOS as read with the change: usage factor 1 again.
	one := client.FloatNoVal{Set: true, Number: 1}
	if err := root.SetQOS(ctx, []client.QOSChange{{Name: "burst", Priority: client.Set(50), UsageFactor: &one}}); err != nil {
		t.Fatal(err)
	}
	list, err := root.QOSList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(list, func(q client.QOS) bool { return q.Name == "burst" })
	if at < 0 {
		t.Fatalf("QOS burst not listed after add: %+v", list)
	}
	if p, _ := list[at].Priority.Value(); p != 50 || (list[at].UsageFactor.Set && list[at].UsageFactor.Number != 1) {
		t.Errorf("QOS burst after modify Priority=50 UsageFactor=1: priority %d usage factor %+v", p, list[at].UsageFactor)
	}

	if err := alice.DeleteQOS(ctx, "burst"); !client.IsForbidden(err) {
		t.Errorf("alice deleting a QOS: %v, want 403", err)
	}
	if err := root.DeleteQOS(ctx, "burst"); err != nil {
		t.Fatal(err)
	}
	if err := root.DeleteAccount(ctx, "physics"); err != nil {
		t.Fatal(err)
	}
	accounts, err := root.Accounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(accounts, func(a client.Account) bool { return a.Name == "physics" || a.Name == "mallory" }) {
		t.Errorf("accounts after delete account physics: %+v", accounts)
	}
	if err := root.DeleteQOS(ctx, "burst"); err == nil {
		t.Error("deleting a QOS that is gone succeeded, want 404")
	}
}
