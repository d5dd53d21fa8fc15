package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// admitReservation judges a Reservation's creation or a change of its spec
// (judgeReservation). Nobody is exempt, Sluice included: scontrol over REST and
// remediation's repair windows book through the same rules as an admin's kubectl.
func (a *admitter) admitReservation(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if a.resvWorld == nil || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var r v1alpha1.Reservation
	if err := json.Unmarshal(req.Object.Raw, &r); err != nil {
		return deny(http.StatusBadRequest, "cannot decode the reservation: "+err.Error())
	}
	var old *v1alpha1.Reservation
	if req.Operation == admissionv1.Update {
		old = &v1alpha1.Reservation{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return deny(http.StatusBadRequest, "cannot decode the reservation as it was: "+err.Error())
		}
	}
	w, err := a.resvWorld(ctx)
	if err != nil {
		a.log.Error(err, "webhook: reading the cluster to judge a reservation", "reservation", r.Name)
		return deny(http.StatusServiceUnavailable, fmt.Sprintf("cannot read the cluster to check reservation %s, try again: %v", r.Name, err))
	}
	if ref := judgeReservation(&r, old, w, a.schedulerNames); ref != nil {
		return deny(ref.code, ref.why)
	}
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// admitPodGroup refuses a PodGroup someone other than Sluice creates naming a reservation
// that does not admit it, as pods naming one are refused: its namespace or its queue must
// be listed, and the queue must be one the namespace may use, since the reservation
// trusts the queue only because admission checked it. Without this, the core would hold
// such a group (ReservationDeleted) instead of its author learning why at once. Changing
// the name later is the admission policy's to refuse (a sluice.dev/ key).
func (a *admitter) admitPodGroup(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || slices.Contains(a.self, req.UserInfo.Username) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var pg v1alpha1.PodGroup
	if err := json.Unmarshal(req.Object.Raw, &pg); err != nil {
		return deny(http.StatusBadRequest, "cannot decode the PodGroup: "+err.Error())
	}
	name := v1alpha1.ReservationOf(pg.Labels, pg.Annotations)
	if name == "" {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = pg.Namespace
	}
	var nsLabels map[string]string
	ns, err := a.namespace(ctx, namespace)
	switch {
	case err == nil:
		nsLabels = ns.Labels
	case !apierrors.IsNotFound(err):
		a.log.Error(err, "webhook: reading the namespace of a PodGroup", "namespace", namespace)
		return deny(http.StatusServiceUnavailable, fmt.Sprintf("cannot read namespace %q to check its queues, try again: %v", namespace, err))
	}
	if why := a.queues.refusal(pg.Spec.Queue, namespace, nsLabels); why != "" {
		return deny(http.StatusForbidden, why)
	}
	if why := a.reservations.refusal(name, namespace, pg.Spec.Queue); why != "" {
		return deny(http.StatusForbidden, why)
	}
	return &admissionv1.AdmissionResponse{Allowed: true}
}
