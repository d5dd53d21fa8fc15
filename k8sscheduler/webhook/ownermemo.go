package webhook

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
)

// Naming a pod's PodGroup at admission reads its owner chain from the API server (a
// Job's pod: a GET of the Job, and of its owners). A workload's pods are created in a
// burst, so without memory a 1000-pod Job costs 1000 reads of the same Job in the
// pod-create path. The memo keeps the owners read for one pod's workload and serves
// them to the workload's next pods.
//
// What is kept is the owner objects, not the group: the group's name can depend on
// the pod itself (a LeaderWorkerSet's pods are grouped by their group-index label), so
// each pod still runs podgrouper.AtAdmission, only with its owner reads answered from
// the memo. A pod therefore gets exactly the name an uncached read would give it, as
// long as its owners are unchanged since they were read; the name depends only on the
// owners' identities (name, UID, kind) and the pod, so the TTL below only bounds how
// long a reparented owner could go unnoticed.
const (
	// ownerMemoTTL serves a burst of one workload's pods; a later scale-up re-reads once.
	ownerMemoTTL = 30 * time.Second
	// ownerMemoMax bounds the memory: this many workloads admitted within one TTL.
	ownerMemoMax = 4096
)

// workloadKey identifies a pod's controlling owner. A UID names one object for its
// whole life, so a namesake workload created later gets its own entry.
type workloadKey struct {
	namespace string
	uid       types.UID
}

// objectKey is one owner read: its kind, namespace and name, as ownerChain asks for it.
type objectKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

// ownerReads are the objects one pod's owner walk read.
type ownerReads map[objectKey]*unstructured.Unstructured

type memoEntry struct {
	reads   ownerReads
	expires time.Time
}

// ownerMemo remembers, per workload, the owners read to name one of its pods. Safe for
// concurrent admission requests. Two pods of a new workload admitted at the same
// moment both read (the Job and ReplicaSet controllers create a workload's first pod
// alone before creating more in parallel, so this is rare and only costs a read).
type ownerMemo struct {
	reader client.Reader
	ttl    time.Duration
	max    int
	now    func() time.Time

	mu      sync.Mutex
	entries map[workloadKey]memoEntry
}

func newOwnerMemo(reader client.Reader) *ownerMemo {
	return &ownerMemo{reader: reader, ttl: ownerMemoTTL, max: ownerMemoMax, now: time.Now,
		entries: map[workloadKey]memoEntry{}}
}

// atAdmission is podgrouper.AtAdmission with the owner reads of pod's workload
// remembered. A nil memo has no owner reader: it names only bare pods, which need no
// read. Bare pods are not remembered: their group is named after the pod. A failed
// naming is not remembered, so the next pod reads again.
func (m *ownerMemo) atAdmission(ctx context.Context, pod *corev1.Pod, nsLabels map[string]string) (*v1alpha1.PodGroup, error) {
	if m == nil { // groupPatch lets only bare pods through: nothing to read
		return podgrouper.AtAdmission(ctx, nil, pod, nsLabels)
	}
	key, owned := workloadOf(pod)
	if !owned {
		return podgrouper.AtAdmission(ctx, m.reader, pod, nsLabels)
	}
	if reads := m.lookup(key); reads != nil {
		return podgrouper.AtAdmission(ctx, replayReader{Reader: m.reader, reads: reads}, pod, nsLabels)
	}
	rec := recordingReader{Reader: m.reader, reads: ownerReads{}}
	pg, err := podgrouper.AtAdmission(ctx, rec, pod, nsLabels)
	if err == nil && len(rec.reads) > 0 {
		m.store(key, rec.reads)
	}
	return pg, err
}

// workloadOf keys pod by its controlling owner as the pod grouper walks it: the
// controller reference, else the first. A reference without a UID (the API server
// rejects it only after admission) is not keyed.
func workloadOf(pod *corev1.Pod) (workloadKey, bool) {
	ref := podgrouper.ControllerOf(pod.OwnerReferences)
	if ref == nil || ref.UID == "" {
		return workloadKey{}, false
	}
	return workloadKey{namespace: pod.Namespace, uid: ref.UID}, true
}

// lookup returns the live entry for key, dropping it when expired.
func (m *ownerMemo) lookup(key workloadKey) ownerReads {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil
	}
	if !now.Before(e.expires) {
		delete(m.entries, key)
		return nil
	}
	return e.reads
}

// store remembers reads for key until the TTL passes. A full memo first drops its
// expired entries, then, if none had expired, the one closest to expiry (the oldest).
func (m *ownerMemo) store(key workloadKey, reads ownerReads) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[key]; !ok && len(m.entries) >= m.max {
		m.evict(now)
	}
	m.entries[key] = memoEntry{reads: reads, expires: now.Add(m.ttl)}
}

func (m *ownerMemo) evict(now time.Time) {
	var oldest workloadKey
	var oldestExpires time.Time
	for k, e := range m.entries {
		if !now.Before(e.expires) {
			delete(m.entries, k)
			continue
		}
		if oldestExpires.IsZero() || e.expires.Before(oldestExpires) {
			oldest, oldestExpires = k, e.expires
		}
	}
	if len(m.entries) >= m.max {
		delete(m.entries, oldest)
	}
}

// keyOf is the objectKey of a Get, or false for a typed object: owners are read as
// unstructured, and only those are remembered.
func keyOf(key client.ObjectKey, obj client.Object) (objectKey, *unstructured.Unstructured, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return objectKey{}, nil, false
	}
	return objectKey{gvk: u.GroupVersionKind(), namespace: key.Namespace, name: key.Name}, u, true
}

// recordingReader reads through and keeps a copy of each object read.
type recordingReader struct {
	client.Reader
	reads ownerReads
}

func (r recordingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	k, u, ok := keyOf(key, obj) // the kind asked for, as a replay will ask for it
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if ok {
		r.reads[k] = u.DeepCopy()
	}
	return nil
}

// replayReader answers the Gets a remembered walk made from its copies; any other
// read (an owner that was gone last time, a pod naming another object) reads through.
type replayReader struct {
	client.Reader
	reads ownerReads
}

func (r replayReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if k, u, ok := keyOf(key, obj); ok {
		if kept := r.reads[k]; kept != nil {
			kept.DeepCopyInto(u)
			return nil
		}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
