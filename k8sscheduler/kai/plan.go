package kai

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Action is what a plan does to one Sluice Queue.
type Action string

const (
	Create    Action = "create"
	Update    Action = "update"
	Delete    Action = "delete"    // a mirrored queue whose KAI Queue is gone (prune only)
	Unchanged Action = "unchanged" // already as the KAI Queue says
	Skip      Action = "skip"      // a Sluice Queue of that name not written from KAI, or a KAI Queue Sluice cannot take
)

// QueueChange is one line of a plan.
type QueueChange struct {
	Name   string
	Action Action
	Want   *v1alpha1.Queue // nil for Delete and for a KAI Queue that cannot be translated
	Have   *v1alpha1.Queue // nil for Create
	Reason string          // why a Skip; the translation's warnings otherwise
}

// PlanQueues compares the Sluice Queues a cluster's KAI Queues become with the Sluice
// Queues it has, sorted by name. Only queues marked MirrorLabel are updated (or, with
// prune, deleted once their KAI Queue is gone): a queue an admin wrote is left alone.
func PlanQueues(kai []*Queue, have []v1alpha1.Queue, prune bool) []QueueChange {
	byName := map[string]*v1alpha1.Queue{}
	for i := range have {
		byName[have[i].Name] = &have[i]
	}
	seen := map[string]bool{}
	var plan []QueueChange
	for _, k := range kai {
		seen[k.Name] = true
		want, warnings, err := SluiceQueue(k)
		h := byName[k.Name]
		c := QueueChange{Name: k.Name, Want: want, Have: h, Reason: strings.Join(warnings, "; ")}
		switch {
		case err != nil:
			c.Action, c.Reason = Skip, err.Error()
		case h == nil:
			c.Action = Create
		case h.Labels[MirrorLabel] != "true":
			c.Action, c.Reason = Skip, fmt.Sprintf("Sluice Queue %q exists and was not written from KAI (no %s label): left as it is", h.Name, MirrorLabel)
		case sameQueue(want, h):
			c.Action = Unchanged
		default:
			c.Action = Update
		}
		plan = append(plan, c)
	}
	if prune {
		for i := range have {
			h := &have[i]
			if !seen[h.Name] && h.Labels[MirrorLabel] == "true" {
				plan = append(plan, QueueChange{Name: h.Name, Action: Delete, Have: h})
			}
		}
	}
	slices.SortFunc(plan, func(a, b QueueChange) int { return strings.Compare(a.Name, b.Name) })
	return plan
}

// sameQueue reports whether have already says what want says (quantities compared by
// value: "1" and "1000m" are one GPU).
func sameQueue(want, have *v1alpha1.Queue) bool {
	return equality.Semantic.DeepEqual(want.Spec, have.Spec)
}

// ApplyQueues carries out a plan with c, in its order: a child written before its parent
// is marked invalid by the scheduler until the parent exists. A conflict on update is
// reported, not retried: the next resync plans again from what is there.
func ApplyQueues(ctx context.Context, c client.Client, plan []QueueChange) error {
	var errs []string
	for _, ch := range plan {
		var err error
		switch ch.Action {
		case Create:
			err = c.Create(ctx, ch.Want.DeepCopy())
		case Update:
			q := ch.Have.DeepCopy()
			q.Spec = ch.Want.Spec
			q.Labels[MirrorLabel] = "true"
			err = c.Update(ctx, q)
		case Delete:
			err = client.IgnoreNotFound(c.Delete(ctx, ch.Have.DeepCopy()))
		}
		if err != nil && !(ch.Action == Create && apierrors.IsAlreadyExists(err)) {
			errs = append(errs, fmt.Sprintf("%s Queue %s: %v", ch.Action, ch.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
