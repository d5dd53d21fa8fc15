package scheduler

import (
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unique"
	"unsafe"
	"weak"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// protoMessage is what the generated protobuf code of a Kubernetes API type provides.
type protoMessage[E any] interface {
	*E
	Marshal() ([]byte, error)
}

// sharedSlices holds one copy of each distinct slice of E that the shared cache's objects
// carry alike, so that they all point at it: every pod of a job asks for the same
// containers and tolerates the same taints, and a copy per pod of the same trimmed
// containers was a large part of the shared cache's heap at scale (a container's struct
// and its requests map are 1.1 KB however little they say; measured: docs/benchmarks.md,
// Memory of `sluice server`). A copy is forgotten once no object holds it (a weak
// pointer, removed by a cleanup), so the table holds only what the cache does.
//
// The objects of an informer cache are never written to (client-go's rule, which every
// reader follows): sharing a slice between them is as safe as sharing the object.
type sharedSlices[E any, P protoMessage[E]] struct {
	mu   sync.Mutex
	held map[string]heldSlice[E]
}

type heldSlice[E any] struct {
	first weak.Pointer[E]
	n     int
}

type heldKey[E any] struct {
	key   string
	first weak.Pointer[E]
}

// share returns the held slice equal to s, or holds s (clipped, so that an append never
// writes into it) when none is. Equal means equal protobuf encodings, which cover every
// field, map keys sorted; s is returned as it is when an element does not encode.
func (t *sharedSlices[E, P]) share(s []E) []E {
	if len(s) == 0 {
		return s
	}
	key, ok := encodedKey[E, P](s)
	if !ok {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, found := t.held[key]; found {
		if p := h.first.Value(); p != nil {
			return unsafe.Slice(p, h.n)
		}
	}
	s = slices.Clip(s)
	w := weak.Make(&s[0])
	if t.held == nil {
		t.held = map[string]heldSlice[E]{}
	}
	t.held[key] = heldSlice[E]{first: w, n: len(s)}
	runtime.AddCleanup(&s[0], t.forget, heldKey[E]{key: key, first: w})
	return s
}

// forget drops a slice no object holds any more, unless an equal one replaced it.
func (t *sharedSlices[E, P]) forget(k heldKey[E]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[k.key].first == k.first {
		delete(t.held, k.key)
	}
}

// len is how many distinct slices are held.
func (t *sharedSlices[E, P]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

// encodedKey is the elements' protobuf encodings, each after its length.
func encodedKey[E any, P protoMessage[E]](s []E) (string, bool) {
	var b strings.Builder
	var n [binary.MaxVarintLen64]byte
	for i := range s {
		enc, err := P(&s[i]).Marshal()
		if err != nil {
			return "", false
		}
		b.Write(n[:binary.PutUvarint(n[:], uint64(len(enc)))])
		b.Write(enc)
	}
	return b.String(), true
}

// sharedPointers holds one value per key for as long as something else holds it, as
// sharedSlices does for slices: the scheduler's pods that ask the same of their node
// share one nodeConstraints.
type sharedPointers[T any] struct {
	mu   sync.Mutex
	held map[string]weak.Pointer[T]
}

type heldPointer[T any] struct {
	key string
	w   weak.Pointer[T]
}

// share returns the value held under key, or holds v there when none is.
func (t *sharedPointers[T]) share(key string, v *T) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.held[key].Value(); p != nil {
		return p
	}
	w := weak.Make(v)
	if t.held == nil {
		t.held = map[string]weak.Pointer[T]{}
	}
	t.held[key] = w
	runtime.AddCleanup(v, t.forget, heldPointer[T]{key: key, w: w})
	return v
}

func (t *sharedPointers[T]) forget(k heldPointer[T]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[k.key] == k.w {
		delete(t.held, k.key)
	}
}

// internedMeta is a copy of a label or annotation map whose keys, and the values under
// the keys in sharedValues, are the one copy unique.Make holds: a pod's keys are those of
// thousands of other pods (about 250 bytes a pod).
func internedMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		k = unique.Make(k).Value()
		if sharedValues[k] {
			v = unique.Make(v).Value()
		}
		out[k] = v
	}
	return out
}

// sharedValues are the label and annotation keys whose values few pods differ in.
var sharedValues = map[string]bool{
	v1alpha1.QueueLabel: true, v1alpha1.KAIQueueLabel: true, v1alpha1.PartitionLabel: true,
	v1alpha1.PodGroupDerivedAnnotation: true, v1alpha1.GPUPortionAnnotation: true,
}
