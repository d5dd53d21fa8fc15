package webhook

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// reservationIndex keeps every Reservation from an informer, so admission checks a
// workload's reservation without a read. Reservations are few: a follower watching
// them costs nothing worth counting.
type reservationIndex struct {
	synced toolscache.InformerSynced
	mu     sync.RWMutex
	byName map[string]*v1alpha1.Reservation
}

// reservationIndexOn indexes the Reservations of informer: unstructured ones (the
// webhook's own dynamic informer) or typed ones (a shared cache's).
func reservationIndexOn(informer crcache.Informer) (*reservationIndex, error) {
	x := &reservationIndex{byName: map[string]*v1alpha1.Reservation{}}
	synced, err := indexEvents(informer, "reservation", &x.mu, x.byName, x.set)
	if err != nil {
		return nil, err
	}
	x.synced = synced
	return x, nil
}

func (x *reservationIndex) set(obj any) {
	r, ok := obj.(*v1alpha1.Reservation)
	if u, isU := obj.(*unstructured.Unstructured); isU {
		r = &v1alpha1.Reservation{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
			r = &v1alpha1.Reservation{} // one that cannot be read admits nobody
		}
		r.Name, ok = u.GetName(), true
	}
	if !ok {
		return
	}
	x.mu.Lock()
	x.byName[r.Name] = r
	x.mu.Unlock()
}

// refusal says why a workload in namespace, charged to queue, may not run in
// reservation name, or "" when it may (v1alpha1.Reservation.AdmitsWorkload). Users are
// not consulted: they are Slurm users, whose jobs the Slurm API checks, and a pod's
// author could claim any of them.
func (x *reservationIndex) refusal(name, namespace, queue string) string {
	if x == nil || name == "" {
		return ""
	}
	x.mu.RLock()
	r := x.byName[name]
	x.mu.RUnlock()
	if r == nil {
		return fmt.Sprintf("reservation %q does not exist (kubectl get reservations lists them)", name)
	}
	if r.AdmitsWorkload(namespace, queue) {
		return ""
	}
	why := fmt.Sprintf("reservation %s does not admit namespace %s or queue %s", name, namespace, queue)
	var lists []string
	if len(r.Spec.Namespaces) > 0 {
		lists = append(lists, fmt.Sprintf("namespaces %v", r.Spec.Namespaces))
	}
	if len(r.Spec.Accounts) > 0 {
		lists = append(lists, fmt.Sprintf("queues %v", r.Spec.Accounts))
	}
	if len(lists) == 0 {
		return why + ": it admits only Slurm users, through the Slurm API"
	}
	return why + ": it admits " + joinOr(lists)
}

func joinOr(parts []string) string {
	parts = slices.Clone(parts)
	if len(parts) == 2 {
		return parts[0] + " and " + parts[1]
	}
	return parts[0]
}

// reservationRefusal says why pod may not run in the reservation its job names, or ""
// when it may or names none. The job's reservation is its derived group's (pg, which the
// pod grouper takes from the pod or its nearest owner) or, for a pod naming its group
// itself, the pod's own: either way the pod's namespace and queue must be admitted, so
// a tenant can put no pod of theirs into another team's reservation by labelling it,
// its Job, or a Job's template.
func (a *admitter) reservationRefusal(pod *corev1.Pod, pg *v1alpha1.PodGroup, namespace, queue string) string {
	name := v1alpha1.ReservationOf(pod.Labels, pod.Annotations)
	if pg != nil {
		if r := v1alpha1.ReservationOf(pg.Labels, pg.Annotations); r != "" {
			name = r
		}
		queue = pg.Spec.Queue
	}
	return a.reservations.refusal(name, namespace, queue)
}

// all is every Reservation known, for judging another against them.
func (x *reservationIndex) all() []*v1alpha1.Reservation {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*v1alpha1.Reservation, 0, len(x.byName))
	for _, r := range x.byName {
		out = append(out, r)
	}
	return out
}
