package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Names of the webhooks that judge reservations (Registration.Reservations); the API
// server names them when it cannot reach them.
const (
	ReservationsWebhookName = "reservations.sluice.dev"
	PodGroupsWebhookName    = "podgroup-reservations.sluice.dev"
)

// reservationWebhooks are the webhooks of the configuration beside sluice (whose client,
// failure policy, timeout and reinvocation they copy): Reservations created or with
// their spec changed, and PodGroups that someone other than Sluice creates naming a
// reservation. They sit in the mutating configuration, so the server keeps one
// registration and one CA bundle; they patch nothing, and with reinvocation a later
// webhook's change is judged again. Failure policy Fail: with the webhook down no
// reservation is booked unchecked.
func (reg Registration) reservationWebhooks(sluice admissionregistrationv1.MutatingWebhook) ([]admissionregistrationv1.MutatingWebhook, error) {
	group := []string{v1alpha1.GroupVersion.Group}
	cluster, namespaced := admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope
	resv := sluice
	resv.Name = ReservationsWebhookName
	resv.Rules = []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: group, APIVersions: []string{"*"}, Resources: []string{"reservations"}, Scope: &cluster},
	}}
	resv.MatchConditions = []admissionregistrationv1.MatchCondition{{
		// Labels, annotations, finalizers: nothing to judge.
		Name: "spec-changed", Expression: "request.operation == 'CREATE' || object.spec != oldObject.spec",
	}}
	groups := sluice
	groups.Name = PodGroupsWebhookName
	groups.Rules = []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: group, APIVersions: []string{"*"}, Resources: []string{"podgroups"}, Scope: &namespaced},
	}}
	key := "'" + v1alpha1.ReservationAnnotation + "'"
	groups.MatchConditions = []admissionregistrationv1.MatchCondition{{
		Name:       "names-a-reservation",
		Expression: key + " in object.metadata.?labels.orValue({}) || " + key + " in object.metadata.?annotations.orValue({})",
	}}
	if len(reg.Users) > 0 {
		users, err := celList(reg.Users)
		if err != nil {
			return nil, err
		}
		// Sluice's own groups: the Slurm API checked a Slurm job's reservation, and the
		// pod grouper's come from pods admission checked.
		groups.MatchConditions = append(groups.MatchConditions, admissionregistrationv1.MatchCondition{
			Name: "not-sluice", Expression: "!(request.userInfo.username in " + users + ")"})
	}
	return []admissionregistrationv1.MutatingWebhook{resv, groups}, nil
}
