package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// The sacctmgr side: accounts are Queues, a user's association is the
// user's name on a Queue, QOS are QOS objects.

func (b *Backend) queues(ctx context.Context) ([]v1alpha1.Queue, error) { return listQueues(ctx, b.c) }

func listQueues(ctx context.Context, c client.Reader) ([]v1alpha1.Queue, error) {
	var list v1alpha1.QueueList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Queues: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// Accounts lists the Queues as accounts.
func (b *Backend) Accounts(ctx context.Context) ([]slurmapi.Account, error) {
	qs, err := b.queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]slurmapi.Account, len(qs))
	for i, q := range qs {
		out[i] = slurmapi.Account{Name: q.Name, Description: q.Name, Organization: q.Spec.ParentQueue, Parent: q.Spec.ParentQueue}
	}
	return out, nil
}

// Associations lists one association per account and one per user on it.
func (b *Backend) Associations(ctx context.Context) ([]slurmapi.Association, error) {
	return Associations(ctx, b.c)
}

// Associations reads the associations from the Queues c lists, as the REST
// API's associations endpoint shows them: for the parts of the server that
// read the account tree without a Backend (the ledger's sshare and sreport).
func Associations(ctx context.Context, c client.Reader) ([]slurmapi.Association, error) {
	qs, err := listQueues(ctx, c)
	if err != nil {
		return nil, err
	}
	cat := CatalogFrom(nil, qs, nil)
	byName := make(map[string]*v1alpha1.Queue, len(qs))
	for i := range qs {
		byName[qs[i].Name] = &qs[i]
	}
	var out []slurmapi.Association
	for i, q := range qs {
		// As sacctmgr shows them: each association with the QOS it has,
		// its own or inherited.
		qos, def := accountQOS(&qs[i], byName)
		out = append(out, slurmapi.Association{ID: len(out) + 1, Account: q.Name, Parent: q.Spec.ParentQueue, QOS: qos, DefaultQOS: def})
		for _, u := range q.Spec.Users {
			out = append(out, slurmapi.Association{ID: len(out) + 1, Account: q.Name, User: u, Parent: q.Name,
				IsDefault: cat.DefaultAccount[u] == q.Name, QOS: qos, DefaultQOS: def})
		}
	}
	return out, nil
}

// QOSList lists the QOS objects.
func (b *Backend) QOSList(ctx context.Context) ([]slurmapi.QOS, error) {
	var list v1alpha1.QOSList
	if err := b.c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list QOS: %w", err)
	}
	out := make([]slurmapi.QOS, len(list.Items))
	for i := range list.Items {
		out[i] = QOSFrom(&list.Items[i])
		out[i].ID = i + 1
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Users lists every user named on a Queue.
func (b *Backend) Users(ctx context.Context) ([]slurmapi.User, error) {
	assocs, err := b.Associations(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*slurmapi.User{}
	var names []string
	for _, a := range assocs {
		if a.User == "" {
			continue
		}
		u := byName[a.User]
		if u == nil {
			u = &slurmapi.User{Name: a.User, AdminLevel: "None"}
			byName[a.User] = u
			names = append(names, a.User)
		}
		u.Associations = append(u.Associations, a)
		if a.IsDefault {
			u.DefaultAccount = a.Account
		}
	}
	sort.Strings(names)
	out := make([]slurmapi.User, len(names))
	for i, n := range names {
		out[i] = *byName[n]
	}
	return out, nil
}

// TRES are the resources Sluice tracks, with slurmdbd's usual ids.
func (b *Backend) TRES(ctx context.Context) ([]slurmapi.TRES, error) {
	return []slurmapi.TRES{{ID: 1, Type: "cpu"}, {ID: 2, Type: "mem"}, {ID: 4, Type: "node"}, {ID: 5, Type: "billing"}, {ID: 1001, Type: "gres", Name: "gpu"}}, nil
}

// AccountingJobs answers sacct from the PodGroups still in the cluster
// until the accounting ledger serves it.
func (b *Backend) AccountingJobs(ctx context.Context, f slurmapi.JobFilter) ([]slurmapi.Job, error) {
	return b.Jobs(ctx, f)
}

// UpsertAccounts creates a Queue per new account.
func (b *Backend) UpsertAccounts(ctx context.Context, accounts []slurmapi.Account) error {
	for _, a := range accounts {
		q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: a.Name}, Spec: v1alpha1.QueueSpec{ParentQueue: a.Parent}}
		if err := b.c.Create(ctx, q); err != nil && !apierrors.IsAlreadyExists(err) {
			return refused("account "+a.Name, err)
		}
	}
	return nil
}

// UpsertAssociations puts users on their account's Queue; an association
// without a user sets the account's parent (if it names one) and its QOS
// list and default (if it names them).
// QOS are kept per account: a user's association may repeat its account's
// QOS, not differ from them (that would change them for every user of the
// account).
func (b *Backend) UpsertAssociations(ctx context.Context, assocs []slurmapi.Association) error {
	for _, a := range assocs {
		var q v1alpha1.Queue
		if err := b.c.Get(ctx, client.ObjectKey{Name: a.Account}, &q); err != nil {
			if apierrors.IsNotFound(err) {
				return slurmapi.BadRequest(slurmapi.ErrInvalidAccount, "associations", "account %q does not exist; add it first", a.Account)
			}
			return err
		}
		before := q.Spec.DeepCopy()
		switch {
		case a.User == "":
			if a.Parent != "" { // a write of QOS alone keeps the account where it is
				q.Spec.ParentQueue = a.Parent
			}
			if a.QOS != nil {
				q.Spec.QOS = a.QOS
			}
			if a.DefaultQOS != "" {
				q.Spec.DefaultQOS = a.DefaultQOS
			}
		default:
			if e := b.sameQOSAsAccount(ctx, &q, a); e != nil {
				return e
			}
			if !slices.Contains(q.Spec.Users, a.User) {
				q.Spec.Users = append(q.Spec.Users, a.User)
			}
		}
		if equality.Semantic.DeepEqual(before, &q.Spec) {
			continue
		}
		if err := b.c.Update(ctx, &q); err != nil {
			return refused("account "+a.Account, err)
		}
	}
	return nil
}

// sameQOSAsAccount refuses a user's association whose QOS differ from
// its account's.
func (b *Backend) sameQOSAsAccount(ctx context.Context, q *v1alpha1.Queue, a slurmapi.Association) error {
	if len(a.QOS) == 0 && a.DefaultQOS == "" {
		return nil
	}
	qs, err := b.queues(ctx)
	if err != nil {
		return err
	}
	byName := make(map[string]*v1alpha1.Queue, len(qs))
	for i := range qs {
		byName[qs[i].Name] = &qs[i]
	}
	list, def := accountQOS(q, byName)
	sameList := len(a.QOS) == 0 || (len(a.QOS) == len(list) && !slices.ContainsFunc(a.QOS, func(n string) bool { return !slices.Contains(list, n) }))
	if sameList && (a.DefaultQOS == "" || a.DefaultQOS == def) {
		return nil
	}
	return slurmapi.BadRequest(slurmapi.ErrNotSupported, "associations",
		"user %q's association names QOS %v (default %q), account %q's are %v (default %q): Sluice keeps QOS per account; set them on the account's association (no user), for all its users",
		a.User, a.QOS, a.DefaultQOS, q.Name, list, def)
}

// UpsertQOS creates or changes QOS objects.
func (b *Backend) UpsertQOS(ctx context.Context, list []slurmapi.QOS) error {
	for _, in := range list {
		var q v1alpha1.QOS
		err := b.c.Get(ctx, client.ObjectKey{Name: in.Name}, &q)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		exists := err == nil
		q.Name = in.Name
		q.Spec.Priority = int32(in.Priority)
		q.Spec.PreemptMode = v1alpha1.PreemptRequeue
		if in.PreemptMode == "CANCEL" {
			q.Spec.PreemptMode = v1alpha1.PreemptCancel
		}
		q.Spec.UsageFactor = nil // 1, the default: a QOS set back to 1 loses its old factor
		if in.UsageFactor != 1 {
			f := resource.MustParse(fmt.Sprintf("%g", in.UsageFactor))
			q.Spec.UsageFactor = &f
		}
		if exists {
			err = b.c.Update(ctx, &q)
		} else {
			err = b.c.Create(ctx, &q)
		}
		if err != nil {
			return refused("QOS "+in.Name, err)
		}
	}
	return nil
}

// UpsertUsers: users exist through their associations.
func (b *Backend) UpsertUsers(ctx context.Context, users []slurmapi.User) error {
	return slurmapi.Errorf(http.StatusNotImplemented, slurmapi.ErrNotSupported, "users",
		"users exist through their associations; add them with associations/ (user on an account)")
}

// DeleteAccount deletes the account's Queue.
func (b *Backend) DeleteAccount(ctx context.Context, name string) error {
	return deleted(b.c.Delete(ctx, &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}}), slurmapi.ErrInvalidAccount, "account", name)
}

// DeleteQOS deletes a QOS object.
func (b *Backend) DeleteQOS(ctx context.Context, name string) error {
	return deleted(b.c.Delete(ctx, &v1alpha1.QOS{ObjectMeta: metav1.ObjectMeta{Name: name}}), slurmapi.ErrInvalidQOS, "QOS", name)
}

func deleted(err error, number int, what, name string) error {
	if apierrors.IsNotFound(err) {
		return slurmapi.NotFound(number, what, "%s %q does not exist", what, name)
	}
	return err
}

// refused words the API server's refusal of a write.
func refused(what string, err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return slurmapi.BadRequest(slurmapi.ErrRestBadRequest, what, "the cluster refused %s: %v", what, err)
	}
	return fmt.Errorf("write %s: %w", what, err)
}

// Backend implements the whole interface.
var _ slurmapi.Backend = (*Backend)(nil)
