package webhook

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// queueIndex keeps every Queue's namespace selector, parsed, from an informer, so
// admission checks queue access without a read.
type queueIndex struct {
	synced toolscache.InformerSynced
	mu     sync.RWMutex
	byName map[string]v1alpha1.QueueAccess
}

func newQueueIndex(dyn dynamic.Interface) (*queueIndex, dynamicinformer.DynamicSharedInformerFactory, error) {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	x, err := queueIndexOn(factory.ForResource(v1alpha1.GroupVersion.WithResource("queues")).Informer())
	return x, factory, err
}

// queueIndexOn indexes the Queues of informer: unstructured ones (the webhook's own
// dynamic informer) or typed ones (a shared cache's).
func queueIndexOn(informer crcache.Informer) (*queueIndex, error) {
	x := &queueIndex{byName: map[string]v1alpha1.QueueAccess{}}
	synced, err := indexEvents(informer, "queue", &x.mu, x.byName, x.set)
	if err != nil {
		return nil, err
	}
	x.synced = synced
	return x, nil
}

func (x *queueIndex) set(obj any) {
	if q, ok := obj.(*v1alpha1.Queue); ok {
		x.mu.Lock()
		x.byName[q.Name] = v1alpha1.AccessOf(q)
		x.mu.Unlock()
		return
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var q v1alpha1.Queue
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &q); err != nil {
		q.Spec = v1alpha1.QueueSpec{} // a Queue that cannot be read admits only its Slurm namespace
	}
	q.Name = u.GetName()
	x.mu.Lock()
	x.byName[q.Name] = v1alpha1.AccessOf(&q)
	x.mu.Unlock()
}

// refusal says why a pod in namespace may not use queue, or "" when it may. A queue not
// (yet) known is not refused here: it charges nothing, and the scheduler keeps its pods
// pending until it exists and admits their namespace.
func (x *queueIndex) refusal(queue, namespace string, nsLabels map[string]string) string {
	if x == nil {
		return ""
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	access, known := x.byName[queue]
	if !known || access.Admits(namespace, nsLabels) {
		return ""
	}
	all := make([]v1alpha1.QueueAccess, 0, len(x.byName))
	for _, a := range x.byName {
		all = append(all, a)
	}
	return access.Refusal(namespace, v1alpha1.AdmittingQueues(all, namespace, nsLabels))
}
