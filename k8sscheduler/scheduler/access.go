package scheduler

import (
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// queueAccess is a Queue's namespace selector as written (to notice a change) and parsed.
type queueAccess struct {
	selector *metav1.LabelSelector
	access   v1alpha1.QueueAccess
}

// setQueueAccess records who may use queue (nil: the queue is gone). A changed selector
// makes every group judge its queue again.
func (c *cache) setQueueAccess(q *v1alpha1.Queue, gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.access[q.Name]
	if gone {
		delete(c.access, q.Name)
	} else {
		if had && equality.Semantic.DeepEqual(old.selector, q.Spec.NamespaceSelector) {
			return
		}
		c.access[q.Name] = queueAccess{selector: q.Spec.NamespaceSelector.DeepCopy(), access: v1alpha1.AccessOf(q)}
	}
	c.dirtyGroups("")
}

// setNamespace records a namespace's labels (nil: gone); a change makes the namespace's
// groups judge their queue again.
func (c *cache) setNamespace(name string, labels map[string]string, gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.nsLabels[name]
	if gone {
		delete(c.nsLabels, name)
	} else {
		if had && maps.Equal(old, labels) {
			return
		}
		c.nsLabels[name] = labels
	}
	c.dirtyGroups(name + "/")
}

// dirtyGroups marks the groups whose key starts with prefix for a rebuild. Callers hold mu.
func (c *cache) dirtyGroups(prefix string) {
	for key, g := range c.groups {
		if strings.HasPrefix(key, prefix) {
			g.dirty = true
		}
	}
	c.poke()
}

// queueRefusal says why pg's namespace may not use its queue, "" when it may or the
// queue is not known (the core then says the queue is missing). Callers hold mu.
func (c *cache) queueRefusal(pg *v1alpha1.PodGroup) string {
	a, ok := c.access[pg.Spec.Queue]
	if !ok {
		return ""
	}
	labels := c.nsLabels[pg.Namespace]
	if a.access.Admits(pg.Namespace, labels) {
		return ""
	}
	all := make([]v1alpha1.QueueAccess, 0, len(c.access))
	for _, o := range c.access {
		all = append(all, o.access)
	}
	return a.access.Refusal(pg.Namespace, v1alpha1.AdmittingQueues(all, pg.Namespace, labels))
}
