package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/go-logr/logr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// maxReviewBytes bounds a request body. The API server caps an object at
// about 3 MiB; the review carries the object once or twice (oldObject).
const maxReviewBytes = 8 << 20

// namespaceGetter returns a namespace or a NotFound error.
type namespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

// admitter answers AdmissionReviews for pod creation.
type admitter struct {
	schedulerNames []string
	defaultQueue   string
	namespace      namespaceGetter
	priorityClass  priorityClassGetter // resolves KAI's priorityClassName label; nil ignores it
	owners         *ownerMemo          // nil: only bare pods get their group at admission
	queues         *queueIndex         // nil: queue access is not checked
	reservations   *reservationIndex   // nil: reservation access is not checked
	given          givenIDs            // job ids given to bare pods lately, so a reinvocation keeps its own
	// self are Sluice's own usernames (the server's, asked of the API server when the
	// webhook starts): pods Sluice creates (a Slurm job's, already bound, with their job
	// id and GPU assignment) keep what Sluice wrote on them.
	self   []string
	gpus   GovernGPUs // every GPU pod is Sluice's (governgpus.go); zero: off
	jobIDs func(context.Context) (uint32, error)
	log    logr.Logger
	// resvWorld reads the cluster to judge a Reservation (reservationView.world); nil:
	// Reservations are not judged (no shared cache).
	resvWorld func(context.Context) (*reservationWorld, error)
}

// ServeHTTP decodes an admission.k8s.io/v1 AdmissionReview and answers it.
// A body that is not such a review gets a plain 4xx (the API server then
// applies the failure policy); a review whose pod cannot be handled gets a
// denial with the reason, echoing the request's uid as the API server needs.
func (a *admitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReviewBytes)).Decode(&review); err != nil {
		status := http.StatusBadRequest
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "cannot decode the AdmissionReview: "+err.Error(), status)
		return
	}
	want := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	if review.GroupVersionKind() != want {
		http.Error(w, fmt.Sprintf("expected apiVersion %s kind %s, got %q %q",
			want.GroupVersion(), want.Kind, review.APIVersion, review.Kind), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "the AdmissionReview has no request", http.StatusBadRequest)
		return
	}
	resp := a.admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		a.log.Error(err, "webhook: writing the admission response", "uid", resp.UID)
	}
}

// admit decides one request: Reservations and PodGroups naming one are judged
// (reservation_admission.go); pods for a Sluice scheduler are validated and
// mutated on creation; with GovernGPUs, GPU pods of other schedulers are adopted
// or refused, and so are tolerations of the GPU taint; everything else passes
// untouched.
func (a *admitter) admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Kind.Group == v1alpha1.GroupVersion.Group && req.SubResource == "" {
		switch req.Kind.Kind {
		case "Reservation":
			return a.admitReservation(ctx, req)
		case "PodGroup":
			return a.admitPodGroup(ctx, req)
		}
	}
	op := req.Operation
	if (op != admissionv1.Create && op != admissionv1.Update) || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if len(req.Object.Raw) == 0 {
		return deny(http.StatusBadRequest, "the admission request carries no pod")
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(http.StatusBadRequest, "cannot decode the pod: "+err.Error())
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = pod.Namespace
	}
	governed := a.governs(namespace, req.UserInfo.Username)
	if op == admissionv1.Update { // only the governed mode registers updates (governgpus.go)
		if !governed {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		var old corev1.Pod
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return deny(http.StatusBadRequest, "cannot decode the pod as it was: "+err.Error())
		}
		if why := a.governedUpdate(&pod, &old); why != "" {
			return deny(http.StatusForbidden, why)
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	switch sluicePod := slices.Contains(a.schedulerNames, pod.Spec.SchedulerName); {
	case sluicePod && governed:
		if why := a.governedSluicePod(&pod); why != "" {
			return deny(http.StatusForbidden, why)
		}
	case !sluicePod && !governed:
		return &admissionv1.AdmissionResponse{Allowed: true}
	case !sluicePod: // governed: adopted pods go on as Sluice's (schedulerNamePatch names them)
		adopt, why := a.governedCreate(&pod)
		if why != "" {
			return deny(http.StatusForbidden, why)
		}
		if !adopt {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
	}
	// The first name is Sluice's own; the others (kai-scheduler) become it.
	nameOps := schedulerNamePatch(&pod, a.schedulerNames[0])
	shared, problem := checkGPURequest(&pod)
	if problem != "" {
		return deny(http.StatusUnprocessableEntity, problem)
	}
	shareTo, problem := fractionContainer(&pod, shared)
	if problem != "" {
		return deny(http.StatusUnprocessableEntity, problem)
	}
	kaiOps := kaiGroupPatch(&pod) // before the group is derived: a KAI group is named explicitly
	var nsLabels map[string]string
	ns, err := a.namespace(ctx, namespace)
	switch {
	case err == nil:
		nsLabels = ns.Labels
	case !apierrors.IsNotFound(err):
		a.log.Error(err, "webhook: reading the namespace for its queue", "namespace", namespace)
		return deny(http.StatusServiceUnavailable, fmt.Sprintf(
			"cannot read namespace %q for its queue label, try again: %v", namespace, err))
	}
	queue := queueFor(&pod, nsLabels, a.defaultQueue)
	named := pod
	named.Namespace = namespace // a create's object may leave it to the request
	pg := a.derivedGroup(ctx, &named, nsLabels)
	keepJobID := pg != nil && a.given.ours(namespace+"/"+pod.Name, v1alpha1.JobIDOf(pod.Labels), time.Now())
	for _, q := range []string{queue, groupQueue(pg)} {
		if why := a.queues.refusal(q, namespace, nsLabels); why != "" {
			return deny(http.StatusForbidden, why)
		}
	}
	self := slices.Contains(a.self, req.UserInfo.Username)
	if !self { // a Slurm job's pods: the Slurm API checked the job's reservation
		if why := a.reservationRefusal(&pod, pg, namespace, queue); why != "" {
			return deny(http.StatusForbidden, why)
		}
	}
	ops := append(nameOps, queuePatch(&pod, queue)...)
	if !self {
		ops = append(ops, ownedPatch(&pod, keepJobID)...)
	}
	ops = append(ops, kaiOps...)
	ops = append(ops, a.priorityPatch(ctx, &pod, pg)...)
	ops = append(ops, a.groupPatch(ctx, &named, pg, keepJobID, req.DryRun != nil && *req.DryRun)...)
	if shared {
		ops = append(ops, envPatch(&pod, shareTo)...)
	}
	if a.gpus.Enabled { // GPU nodes carry the taint; Sluice's pods tolerate it
		ops = append(ops, tolerationPatch(&pod)...)
	}
	if len(ops) == 0 {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	patch, err := json.Marshal(ops)
	if err != nil { // only plain strings and EnvVars: cannot fail
		return deny(http.StatusInternalServerError, "cannot encode the patch: "+err.Error())
	}
	patchType := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &patchType}
}

// deny refuses a request with a message the API server shows the user after
// `admission webhook "..." denied the request: `.
func deny(code int32, message string) *admissionv1.AdmissionResponse {
	reason := metav1.StatusReasonBadRequest
	switch code {
	case http.StatusUnprocessableEntity:
		reason = metav1.StatusReasonInvalid
	case http.StatusForbidden:
		reason = metav1.StatusReasonForbidden
	case http.StatusServiceUnavailable:
		reason = metav1.StatusReasonServiceUnavailable
	case http.StatusInternalServerError:
		reason = metav1.StatusReasonInternalError
	}
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message,
	}}
}
