package scheduler

import (
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// slimPod keeps only what the scheduler reads of a pod, so that a cache of every pod in
// the cluster stays small: pods of other schedulers lose their labels and annotations too.
func slimPod(p *corev1.Pod, schedulerName string) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			NodeName: p.Spec.NodeName, SchedulerName: p.Spec.SchedulerName, Overhead: p.Spec.Overhead,
			Containers: slimContainers(p.Spec.Containers), InitContainers: slimContainers(p.Spec.InitContainers),
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase, StartTime: p.Status.StartTime},
	}
	if a, ok := p.Annotations[v1alpha1.GPUAssignmentAnnotation]; ok {
		out.Annotations = map[string]string{v1alpha1.GPUAssignmentAnnotation: a}
	}
	// Every pod keeps its labels: our pods' affinity and spread selectors match other
	// schedulers' pods too, and the labels mark idle validations and GPU reservations.
	out.Labels = p.Labels
	if _, ok := p.Labels[v1alpha1.GPUReservationLabel]; ok { // holds a shared GPU
		if d, ok := p.Annotations[v1alpha1.ReservedGPUAnnotation]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[v1alpha1.ReservedGPUAnnotation] = d
		}
	}
	if p.Spec.SchedulerName == schedulerName {
		out.Annotations = p.Annotations
		out.Spec.NodeSelector, out.Spec.Priority = p.Spec.NodeSelector, p.Spec.Priority
		out.Spec.ActiveDeadlineSeconds = p.Spec.ActiveDeadlineSeconds
		out.Spec.Affinity, out.Spec.Tolerations = p.Spec.Affinity, p.Spec.Tolerations
		out.Spec.TopologySpreadConstraints = p.Spec.TopologySpreadConstraints
		out.Spec.ResourceClaims = p.Spec.ResourceClaims
		out.Status.ResourceClaimStatuses = p.Status.ResourceClaimStatuses
		out.Spec.Volumes = claimVolumes(p.Spec.Volumes)
	}
	return out
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = corev1.Container{Name: cs[i].Name, Resources: corev1.ResourceRequirements{Requests: cs[i].Resources.Requests},
			Ports: hostPorts(cs[i].Ports), RestartPolicy: cs[i].RestartPolicy}
	}
	return out
}

// hostPorts keeps the ports a container takes on its node; nil, the usual case, when none.
func hostPorts(ps []corev1.ContainerPort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range ps {
		if p.HostPort > 0 {
			out = append(out, corev1.ContainerPort{HostPort: p.HostPort, Protocol: p.Protocol, HostIP: p.HostIP})
		}
	}
	return out
}

// slimNode drops images, conditions and other status the scheduler does not read.
func slimNode(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels, Annotations: n.Annotations},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
}

// transform is the informers' transform: slim pods and nodes, no managed fields anywhere.
// observe, when not nil, sees each pod whole first.
func transform(schedulerName string, observe func(*corev1.Pod)) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.Pod:
			if observe != nil {
				observe(o)
			}
			return slimPod(o, schedulerName), nil
		case *corev1.Node:
			return slimNode(o), nil
		case metav1.Object:
			o.SetManagedFields(nil)
		}
		return obj, nil
	}
}

// handler adapts typed add/update/delete callbacks to an informer handler; deletes of
// objects the informer lost track of are unwrapped.
func handler[T any](set func(T), del func(T)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { callTyped(obj, set) },
		UpdateFunc: func(_, obj any) { callTyped(obj, set) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			callTyped(obj, del)
		},
	}
}

func callTyped[T any](obj any, f func(T)) {
	if t, ok := obj.(T); ok {
		f(t)
		return
	}
	utilruntime.HandleError(fmt.Errorf("informer event ignored: unexpected object %T", obj))
}

func podKey(ns, name string) string { return ns + "/" + name }

// podHandlers keeps the cache's pods current. Finished pods hold nothing and are dropped.
func (s *Scheduler) podHandlers() toolscache.ResourceEventHandler {
	return handler(s.setPodFromInformer, func(p *corev1.Pod) {
		if isReservation(p, s.cfg.GPUReservationNamespace) {
			s.cache.setReservation(p, true)
		}
		s.cache.forgetDRAPod(podKey(p.Namespace, p.Name))
		s.cache.setPod(podKey(p.Namespace, p.Name), nil)
	})
}

// setPodFromInformer records a pod's new version (or one read again after a resource
// claim it names changed: dra_informers.go).
func (s *Scheduler) setPodFromInformer(p *corev1.Pod) {
	key := podKey(p.Namespace, p.Name)
	reserves := isReservation(p, s.cfg.GPUReservationNamespace)
	if reserves {
		s.cache.setReservation(p, false)
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		s.cache.forgetDRAPod(key)
		s.cache.setPod(key, nil)
		s.cache.noteRan(convertPodAfter(p, s.cfg.SchedulerName, nil))
		return
	}
	e := convertPodAfter(p, s.cfg.SchedulerName, s.cache.pod(key))
	e.reservation = reserves
	if e.ours && len(p.Spec.ResourceClaims) > 0 {
		s.cache.fillDRA(e, p)
	}
	s.cache.setPod(key, e)
}

func (s *Scheduler) nodeHandlers() toolscache.ResourceEventHandler {
	return handler(func(n *corev1.Node) {
		bn, err := convertNode(n)
		if err != nil {
			s.nodeProblem(n, err)
		}
		s.cache.setNode(bn, n)
	}, func(n *corev1.Node) { s.cache.deleteNode(n.Name) })
}

func (s *Scheduler) podGroupHandlers() toolscache.ResourceEventHandler {
	return handler(func(pg *v1alpha1.PodGroup) { s.cache.setPodGroup(pg) },
		func(pg *v1alpha1.PodGroup) { s.cache.deletePodGroup(pg.Namespace + "/" + pg.Name) })
}

func (s *Scheduler) queueHandlers() toolscache.ResourceEventHandler {
	return handler(func(q *v1alpha1.Queue) {
		bq := convertQueue(q)
		s.cache.setQueue(q.Name, &bq)
		s.cache.setQueueAccess(q, false)
	}, func(q *v1alpha1.Queue) {
		s.cache.setQueue(q.Name, nil)
		s.cache.setQueueAccess(q, true)
	})
}

func (s *Scheduler) namespaceHandlers() toolscache.ResourceEventHandler {
	return handler(func(ns *corev1.Namespace) { s.cache.setNamespace(ns.Name, ns.Labels, false) },
		func(ns *corev1.Namespace) { s.cache.setNamespace(ns.Name, nil, true) })
}

func (s *Scheduler) qosHandlers() toolscache.ResourceEventHandler {
	return handler(func(q *v1alpha1.QOS) {
		bq := convertQOS(q)
		s.cache.setQOS(q.Name, &bq)
	}, func(q *v1alpha1.QOS) { s.cache.setQOS(q.Name, nil) })
}

func (s *Scheduler) partitionHandlers() toolscache.ResourceEventHandler {
	return handler(func(p *v1alpha1.Partition) {
		e := convertPartition(p)
		s.cache.setPartition(p.Name, &e)
	}, func(p *v1alpha1.Partition) { s.cache.setPartition(p.Name, nil) })
}
