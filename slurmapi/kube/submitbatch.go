package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Group commit of submissions. One API write per submission caps the rate
// at what the API server can store one object at a time (measured:
// docs/benchmarks.md, Slurm REST API), so with Options.SubmitWindow
// set, Submit hands each validated job's PodGroup to a batcher: the jobs
// arriving within the window are stored together in one ConfigMap (one
// data key per job id, the PodGroup's JSON), and every waiting Submit is
// answered once that single write returns. An acknowledged job id is thus
// stored, and survives a crash, as with a direct create. The SubmitQueue
// (submitbatch_queue.go) turns batches into PodGroups on the leader; until
// then the views read jobs from the batches (submitbatch_read.go).
const (
	// SubmitBatchLabel marks a ConfigMap holding submitted jobs not yet
	// created as PodGroups.
	SubmitBatchLabel = v1alpha1.SubmitBatchLabel
	// SubmitTimeAnnotation (RFC 3339, nanoseconds) is when a batched job was
	// acknowledged; its PodGroup is created later, so creationTimestamp is
	// not the submit time.
	SubmitTimeAnnotation = v1alpha1.SubmitTimeAnnotation
	// submitBatchBytes keeps a batch well under the API server's object
	// size limit (1 MiB for a ConfigMap's data), leaving room for metadata.
	submitBatchBytes = 700 << 10
	// defaultSubmitBatchJobs is the most jobs one batch holds by default.
	defaultSubmitBatchJobs = 256
	// batchWriteTimeout bounds the one write a batch's clients wait for.
	batchWriteTimeout = 30 * time.Second
)

// submitBatch is one group of jobs stored by one write.
type submitBatch struct {
	data  map[string]string // job id -> PodGroup JSON
	first uint32            // the lowest job id, which names the batch
	size  int
	timer *time.Timer
	done  chan struct{} // closed when err is final
	err   error
}

// batcher collects submissions into batches and writes each once.
type batcher struct {
	// core writes batches as protobuf and does not decode the echoed
	// object: both cut the API server's and Sluice's CPU per batch.
	core      rest.Interface
	namespace string
	window    time.Duration
	maxJobs   int

	mu   sync.Mutex
	open *submitBatch // the batch new jobs join; nil until the next job
}

func newBatcher(cfg *rest.Config, opts Options) (*batcher, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &batcher{core: cs.CoreV1().RESTClient(), namespace: opts.Namespace, window: opts.SubmitWindow, maxJobs: opts.SubmitBatchJobs}, nil
}

// errOversize says a job is too large to share a batch (a script near the
// body limit): it is created on its own, as without a window.
var errOversize = errors.New("job too large for a batch")

// store puts pg (job id) in a batch and returns once that batch is stored
// or failed: nil means the job is durable.
func (w *batcher) store(ctx context.Context, id uint32, pg *v1alpha1.PodGroup) error {
	data, err := jobstate.EncodeBatched(pg)
	if err != nil {
		return fmt.Errorf("encode job %d: %w", id, err)
	}
	if len(data) > submitBatchBytes {
		return errOversize
	}
	b := w.join(id, string(data))
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err() // the batch may still be stored: the client left before the answer
	}
}

// join adds one job to the open batch, opening one (and starting its
// window) if none is, and sends the batch off when it is full.
func (w *batcher) join(id uint32, data string) *submitBatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b := w.open; b != nil && b.size+len(data) > submitBatchBytes {
		w.sealLocked(b)
	}
	b := w.open
	if b == nil {
		b = &submitBatch{data: map[string]string{}, first: id, done: make(chan struct{})}
		w.open = b
		b.timer = time.AfterFunc(w.window, func() {
			w.mu.Lock()
			if w.open == b {
				w.open = nil
			}
			w.mu.Unlock()
			w.flush(b)
		})
	}
	b.data[v1alpha1.FormatJobID(id)] = data
	b.first = min(b.first, id)
	b.size += len(data)
	if len(b.data) >= w.maxJobs {
		w.sealLocked(b)
	}
	return b
}

// sealLocked closes b to new jobs and writes it now, unless its window
// has just ended and the timer writes it.
func (w *batcher) sealLocked(b *submitBatch) {
	w.open = nil
	if b.timer.Stop() {
		go w.flush(b)
	}
}

// flush stores b as one ConfigMap and answers its waiting submissions.
func (w *batcher) flush(b *submitBatch) {
	defer close(b.done)
	ctx, cancel := context.WithTimeout(context.Background(), batchWriteTimeout)
	defer cancel()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: batchName(b.first), Namespace: w.namespace,
			Labels: map[string]string{SubmitBatchLabel: "true", "app.kubernetes.io/managed-by": "sluice"},
		},
		Data: b.data,
	}
	err := w.core.Post().Namespace(w.namespace).Resource("configmaps").Body(cm).Do(ctx).Error()
	if err == nil {
		return
	}
	b.err = fmt.Errorf("store a batch of %d jobs: %w", len(b.data), err)
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
		// A timeout may hide a write that happened: the clients are told
		// nothing was stored, so make sure of it.
		ctx, cancel := context.WithTimeout(context.Background(), batchWriteTimeout)
		defer cancel()
		err := w.core.Delete().Namespace(w.namespace).Resource("configmaps").Name(cm.Name).Do(ctx).Error()
		if err != nil && !apierrors.IsNotFound(err) {
			b.err = fmt.Errorf("%w; the batch may have been stored and its jobs may still start (%v)", b.err, err)
		}
	}
}

// batchName names the batch whose lowest job id is first: ids are never
// handed out twice, so neither is the name.
func batchName(first uint32) string { return "submit-batch-" + strconv.FormatUint(uint64(first), 10) }
