package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// PolicyName names the ValidatingAdmissionPolicy (and its binding) that keeps Sluice's
// labels and annotations Sluice's; it appears in the API server's refusal
// ("ValidatingAdmissionPolicy 'sluice-owned-metadata' with binding ... denied request").
const PolicyName = "sluice-owned-metadata"

// Policy describes the ValidatingAdmissionPolicy RegisterPolicy installs: on pods
// (also through pods/status and pods/binding) and PodGroups, anyone but Sluice
//   - creates nothing that carries a Sluice-owned key (v1alpha1.OwnedKey), except the
//     job id and derived-group mark the webhook itself puts on the pods of Sluice's
//     schedulers (it removes whatever the author wrote first), nor a PodGroup with
//     spec.slurm (a Slurm job is the REST API's to write);
//   - changes, adds or removes no sluice.dev/ label or annotation, nor kai.scheduler/queue
//     (the queue was checked at admission), nor a PodGroup's spec.slurm;
//   - binds no pod with sluice.dev/ annotations (a binding's annotations land on the pod).
//
// The API server enforces it for every user, system:masters included, so it holds with
// the webhook down too.
type Policy struct {
	// Users are Sluice's own identities, exempt: the server's username (SelfUser).
	Users []string
	// SchedulerNames are the schedulerNames whose pods the webhook admits; default ["sluice"].
	SchedulerNames []string
}

// SelfUser asks the API server who the client is (a SelfSubjectReview), so the policy
// exempts exactly the identity the server runs as: its ServiceAccount in the chart, the
// rig's server credential under `sluice dev`.
func SelfUser(ctx context.Context, client kubernetes.Interface) (string, error) {
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("webhook: who am I (SelfSubjectReview): %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("webhook: the API server did not say who the server is")
	}
	return review.Status.UserInfo.Username, nil
}

// RegisterPolicy creates or updates the policy and its binding.
func RegisterPolicy(ctx context.Context, client kubernetes.Interface, p Policy) error {
	policy, binding, err := p.objects()
	if err != nil {
		return err
	}
	api := client.AdmissionregistrationV1()
	err = upsert(ctx, policy, api.ValidatingAdmissionPolicies().Create, api.ValidatingAdmissionPolicies().Get,
		func(cur *admissionregistrationv1.ValidatingAdmissionPolicy) {
			cur.Labels, cur.Spec = policy.Labels, policy.Spec
		},
		api.ValidatingAdmissionPolicies().Update)
	if err != nil {
		return fmt.Errorf("webhook: register policy %s: %w", PolicyName, err)
	}
	err = upsert(ctx, binding, api.ValidatingAdmissionPolicyBindings().Create, api.ValidatingAdmissionPolicyBindings().Get,
		func(cur *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			cur.Labels, cur.Spec = binding.Labels, binding.Spec
		},
		api.ValidatingAdmissionPolicyBindings().Update)
	if err != nil {
		return fmt.Errorf("webhook: register policy binding %s: %w", PolicyName, err)
	}
	return nil
}

func upsert[T metav1.Object](ctx context.Context, want T,
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	get func(context.Context, string, metav1.GetOptions) (T, error),
	copyInto func(T), update func(context.Context, T, metav1.UpdateOptions) (T, error),
) error {
	if _, err := create(ctx, want, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		copyInto(cur)
		_, err = update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// celList renders names as a CEL list of string literals. Callers pass usernames and
// DNS names; a quote or backslash in one is refused rather than escaped.
func celList(names []string) (string, error) {
	quoted := make([]string, len(names))
	for i, n := range names {
		if strings.ContainsAny(n, `'\`) || strings.ContainsAny(n, "\n\r") {
			return "", fmt.Errorf("webhook: %q cannot be named in the admission policy", n)
		}
		quoted[i] = "'" + n + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]", nil
}

// guarded is CEL for "key k is one nobody but Sluice changes".
const guarded = `(k.startsWith('` + v1alpha1.SluicePrefix + `') || k == '` + v1alpha1.KAIQueueLabel + `')`

func (p Policy) objects() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	if len(p.Users) == 0 {
		return nil, nil, errors.New("webhook: Policy.Users is required (SelfUser): Sluice must be able to write its own labels")
	}
	if len(p.SchedulerNames) == 0 {
		p.SchedulerNames = []string{v1alpha1.DefaultSchedulerName}
	}
	if err := validSchedulerNames(p.SchedulerNames); err != nil {
		return nil, nil, err
	}
	users, err := celList(p.Users)
	if err != nil {
		return nil, nil, err
	}
	schedulers, _ := celList(p.SchedulerNames)
	userKeys, _ := celList(v1alpha1.UserKeys)
	owned := `(k.startsWith('` + v1alpha1.SluicePrefix + `') && !(k in ` + userKeys + `))`
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	labels := map[string]string{"app.kubernetes.io/managed-by": "sluice"}
	create, update := admissionregistrationv1.Create, admissionregistrationv1.Update
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy: &equivalent,
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{create, update},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
							Resources: []string{"pods", "pods/status", "pods/binding"}},
					}},
					{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{create, update},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
							Resources: []string{"podgroups"}},
					}},
				},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "not-sluice", Expression: "!(request.userInfo.username in " + users + ")",
			}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "labels", Expression: "object.metadata.?labels.orValue({})"},
				{Name: "annotations", Expression: "object.metadata.?annotations.orValue({})"},
				{Name: "oldLabels", Expression: "oldObject == null ? {} : oldObject.metadata.?labels.orValue({})"},
				{Name: "oldAnnotations", Expression: "oldObject == null ? {} : oldObject.metadata.?annotations.orValue({})"},
				// The pods the webhook admits: it sets their job id and derived-group mark itself.
				{Name: "admitted", Expression: "request.kind.kind == 'Pod' && request.?subResource.orValue('') == '' && object.spec.?schedulerName.orValue('') in " + schedulers},
				{Name: "forged", Expression: "request.operation != 'CREATE' ? [] : " +
					"variables.labels.filter(k, " + owned + " && !(variables.admitted && k == '" + v1alpha1.JobIDLabel + "')) + " +
					"variables.annotations.filter(k, request.?subResource.orValue('') == 'binding' ? k.startsWith('" + v1alpha1.SluicePrefix + "') : " +
					owned + " && !(variables.admitted && k == '" + v1alpha1.PodGroupDerivedAnnotation + "'))"},
				{Name: "changed", Expression: "request.operation != 'UPDATE' ? [] : " +
					"variables.labels.filter(k, " + guarded + " && (!(k in variables.oldLabels) || variables.oldLabels[k] != variables.labels[k])) + " +
					"variables.oldLabels.filter(k, " + guarded + " && !(k in variables.labels)) + " +
					"variables.annotations.filter(k, " + guarded + " && (!(k in variables.oldAnnotations) || variables.oldAnnotations[k] != variables.annotations[k])) + " +
					"variables.oldAnnotations.filter(k, " + guarded + " && !(k in variables.annotations))"},
			},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression:        "size(variables.forged) == 0",
					MessageExpression: "'only Sluice sets ' + variables.forged.join(', ') + ' (remove them; Sluice writes what it owns)'",
					Reason:            new(metav1.StatusReasonForbidden),
				},
				{
					Expression:        "size(variables.changed) == 0",
					MessageExpression: "'only Sluice changes ' + variables.changed.join(', ') + ' once the object exists'",
					Reason:            new(metav1.StatusReasonForbidden),
				},
				{
					Expression: "request.kind.kind != 'PodGroup' || (request.operation == 'CREATE' ? !has(object.spec.slurm) : " +
						"(has(object.spec.slurm) == has(oldObject.spec.slurm) && (!has(object.spec.slurm) || object.spec.slurm == oldObject.spec.slurm)))",
					Message: "only Sluice's REST API writes a PodGroup's spec.slurm (submit Slurm jobs through it)",
					Reason:  new(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName, Labels: labels},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding, nil
}
