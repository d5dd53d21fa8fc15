package webhook

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// indexEvents keeps an index by object name (byName, guarded by mu) in step with an
// informer: set reads an added or updated object (typed, or unstructured from the
// webhook's own dynamic informer) into it, and a deleted object's name leaves it. It
// returns when the informer's events have all been seen.
func indexEvents[V any](informer crcache.Informer, what string, mu *sync.RWMutex, byName map[string]V, set func(obj any)) (toolscache.InformerSynced, error) {
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				mu.Lock()
				delete(byName, o.GetName())
				mu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("webhook: %s informer: %w", what, err)
	}
	return reg.HasSynced, nil
}
