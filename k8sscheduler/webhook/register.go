package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Names of what Register installs. The webhook's name appears in the API
// server's message when the webhook cannot be reached ("failed calling
// webhook \"pod-admission.sluice.dev\""), so it says whose admission failed.
const (
	DefaultConfigurationName = "sluice"
	WebhookName              = "pod-admission.sluice.dev"
)

// Registration describes the MutatingWebhookConfiguration Register installs (Server.Run
// registers itself with one built from its Config).
type Registration struct {
	// Name of the MutatingWebhookConfiguration; default "sluice".
	Name string
	// CABundle is the PEM the API server verifies the webhook with:
	// Server.CABundle(). Required.
	CABundle []byte
	// URL is the webhook's address when the API server reaches it directly,
	// such as https://localhost:9443/mutate-pods under `sluice dev`
	// (Server.URL()). Exactly one of URL and Service is set.
	URL string
	// Service is the in-cluster Service in front of the webhook (the
	// chart); an empty Path means MutatePath.
	Service *admissionregistrationv1.ServiceReference
	// SchedulerNames limits the webhook to pods naming one of these
	// schedulers; default ["sluice"]. Keep it equal to Config.SchedulerNames.
	SchedulerNames []string
	// TimeoutSeconds bounds one call, 1 to 30; default 10.
	TimeoutSeconds int32
	// GovernGPUs, when enabled, adds GPUPodsWebhookName for the pods of other schedulers
	// the mode governs (register_governgpus.go). Keep it equal to Config.GovernGPUs.
	GovernGPUs GovernGPUs
	// Users are Sluice's own identities (SelfUser): the pods they create are never
	// governed, so GPU reservation and validation pods do not depend on the webhook,
	// and the PodGroups they create are not judged for their reservation.
	Users []string
	// Reservations adds ReservationsWebhookName and PodGroupsWebhookName
	// (register_reservations.go): Reservations and the PodGroups naming one are judged.
	Reservations bool
}

// Register creates the MutatingWebhookConfiguration described by reg, or
// updates it to match when it exists, so a restart with a new CA or address
// takes over the old registration. Afterwards cert-controller's rotator (with
// Config.CertSecret) keeps its caBundle that of the CA it rotates.
func Register(ctx context.Context, restConfig *rest.Config, reg Registration) error {
	want, err := reg.configuration()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("webhook: register: %w", err)
	}
	configs := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := configs.Create(ctx, want, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("webhook: register %s: %w", want.Name, err)
		}
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := configs.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Labels = want.Labels
		cur.Webhooks = want.Webhooks
		_, err = configs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("webhook: update registration %s: %w", want.Name, err)
	}
	return nil
}

// configuration builds the object Register installs: pod creation only,
// failurePolicy Fail (a Sluice pod is refused, not admitted unconfigured,
// while the webhook is down) and a CEL match condition so pods for other
// schedulers never call it.
func (reg Registration) configuration() (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	if reg.Name == "" {
		reg.Name = DefaultConfigurationName
	}
	if len(reg.SchedulerNames) == 0 {
		reg.SchedulerNames = []string{v1alpha1.DefaultSchedulerName}
	}
	if err := validSchedulerNames(reg.SchedulerNames); err != nil {
		return nil, err
	}
	if reg.TimeoutSeconds == 0 {
		reg.TimeoutSeconds = 10
	}
	if reg.TimeoutSeconds < 1 || reg.TimeoutSeconds > 30 {
		return nil, fmt.Errorf("webhook: Registration.TimeoutSeconds %d is not within 1 to 30", reg.TimeoutSeconds)
	}
	if len(reg.CABundle) == 0 {
		return nil, errors.New("webhook: Registration.CABundle is required (Server.CABundle())")
	}
	client := admissionregistrationv1.WebhookClientConfig{CABundle: reg.CABundle}
	switch {
	case (reg.URL == "") == (reg.Service == nil):
		return nil, errors.New("webhook: Registration needs exactly one of URL and Service")
	case reg.URL != "":
		if !strings.HasPrefix(reg.URL, "https://") {
			return nil, fmt.Errorf("webhook: Registration.URL %q must be https://", reg.URL)
		}
		client.URL = &reg.URL
	default:
		svc := *reg.Service
		if svc.Path == nil {
			path := MutatePath
			svc.Path = &path
		}
		client.Service = &svc
	}
	quoted := make([]string, len(reg.SchedulerNames))
	for i, n := range reg.SchedulerNames {
		quoted[i] = "'" + n + "'" // DNS subdomains: no quote to escape
	}
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	// Numbering a bare pod may move the job id counter; a dry run takes no id.
	noneOnDryRun := admissionregistrationv1.SideEffectClassNoneOnDryRun
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	namespaced := admissionregistrationv1.NamespacedScope
	webhooks := []admissionregistrationv1.MutatingWebhook{{
		Name:         WebhookName,
		ClientConfig: client,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &namespaced,
			},
		}},
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "sluice-scheduler-name",
			Expression: fmt.Sprintf("has(object.spec.schedulerName) && object.spec.schedulerName in [%s]", strings.Join(quoted, ", ")),
		}},
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		SideEffects:             &noneOnDryRun,
		TimeoutSeconds:          &reg.TimeoutSeconds,
		AdmissionReviewVersions: []string{"v1"},
		// The patch is idempotent and fills in containers a later
		// webhook may add, so running again is safe.
		ReinvocationPolicy: &ifNeeded,
	}}
	if reg.GovernGPUs.Enabled {
		governed, err := reg.gpuPodsWebhook(webhooks[0])
		if err != nil {
			return nil, err
		}
		webhooks = append(webhooks, governed)
	}
	if reg.Reservations {
		judged, err := reg.reservationWebhooks(webhooks[0])
		if err != nil {
			return nil, err
		}
		webhooks = append(webhooks, judged...)
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   reg.Name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "sluice"},
		},
		Webhooks: webhooks,
	}, nil
}
