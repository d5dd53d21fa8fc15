package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/gpureservation"
)

// deviceHandout stands in, on the rig's simulated nodes, for what a real node does for a
// GPU reservation pod: the device plugin picks a free GPU and the container runtime sets
// NVIDIA_VISIBLE_DEVICES, and the pod's `sluice gpu-reservation` reports it. kwok runs no
// container, so the rig picks the device (the first of the node's GPUs, by the per-GPU
// annotation, that no other reservation on the node holds) and runs the same reporting
// code (gpureservation.Report) with that environment. What is simulated is the device
// plugin's choice; the report and everything Sluice does with it are real.
type deviceHandout struct {
	client kubernetes.Interface
	mu     sync.Mutex
	given  map[string]string // pod UID -> device, until the pod goes
}

// runDeviceHandout hands devices out until ctx ends; the returned channel closes then.
func runDeviceHandout(ctx context.Context, client kubernetes.Interface) <-chan struct{} {
	h := &deviceHandout{client: client, given: map[string]string{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = v1alpha1.GPUReservationLabel + "=true"
	}))
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.pod(ctx, obj) },
		UpdateFunc: func(_, obj any) { h.pod(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				h.mu.Lock()
				delete(h.given, string(p.UID))
				h.mu.Unlock()
			}
		},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		<-ctx.Done()
		factory.Shutdown()
	}()
	return done
}

// pod reports a device for a running reservation pod that has none yet.
func (h *deviceHandout) pod(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil ||
		p.Annotations[v1alpha1.ReservedGPUAnnotation] != "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	dev, err := h.pick(ctx, p)
	if err != nil {
		return // a node without per-GPU detail or with no GPU free: as a kubelet, no device
	}
	env := map[string]string{
		gpureservation.PodNameEnv:      p.Name,
		gpureservation.PodNamespaceEnv: p.Namespace,
		v1alpha1.VisibleDevicesEnv:     dev,
	}
	if _, err := gpureservation.Report(ctx, h.client, func(k string) string { return env[k] }); err == nil {
		h.given[string(p.UID)] = dev
	}
}

// pick is the first GPU of the pod's node that no other reservation holds.
func (h *deviceHandout) pick(ctx context.Context, p *corev1.Pod) (string, error) {
	if d, ok := h.given[string(p.UID)]; ok {
		return d, nil
	}
	node, err := h.client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if node.Annotations[annotationKwokNode] != kwokNodeValue {
		// A real node's kubelet runs the pod: its device plugin chose, and the pod reports.
		return "", fmt.Errorf("%s is a real node", node.Name)
	}
	gpus, err := v1alpha1.ParseNodeGPUs(node.Annotations[AnnotationGPUs])
	if err != nil {
		return "", err
	}
	pods, err := h.client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: v1alpha1.GPUReservationLabel + "=true", FieldSelector: "spec.nodeName=" + p.Spec.NodeName,
	})
	if err != nil {
		return "", err
	}
	var held []string
	for _, o := range pods.Items {
		if d := o.Annotations[v1alpha1.ReservedGPUAnnotation]; d != "" && o.UID != p.UID {
			held = append(held, d)
		}
		if d, ok := h.given[string(o.UID)]; ok && o.UID != p.UID {
			held = append(held, d)
		}
	}
	for _, g := range gpus {
		if g.UUID != "" && !slices.Contains(held, g.UUID) {
			return g.UUID, nil
		}
	}
	return "", fmt.Errorf("no free GPU on %s", p.Spec.NodeName)
}
