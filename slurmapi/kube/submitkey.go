package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/slurmapi"
)

// Idempotent submissions (slurmapi.IdempotencyKeyHeader). The first
// submission with a key claims it by creating a ConfigMap named after the
// user and the key, holding the job id it was given, before the job is
// stored; the create is atomic, so of two submissions racing with one key
// (a retry sent while the first attempt still runs, on any replica) exactly
// one claims it and the other answers with the claimed id. A claim whose job
// is not stored (the replica died between the two writes) is completed by
// the retry under the same id: the job's objects are named by its id, so
// storing it twice stores it once.
const (
	// SubmitKeyLabel marks the ConfigMaps that remember submission keys.
	SubmitKeyLabel = "sluice.dev/submit-key"
	submitKeyJob   = "job"  // data key: the job id the key was given
	submitKeyBody  = "body" // data key: the SHA-256 of the first body
	submitKeyUser  = "user" // data key: who submitted, for an admin reading it
)

// submitKeyName names the claim of key by user: a hash, so any key is a
// valid object name and one user's key never names another user's job.
func submitKeyName(user, key string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + key))
	return "submit-key-" + hex.EncodeToString(sum[:16])
}

// keyClaim is what a stored claim says.
type keyClaim struct {
	job      uint32
	bodyHash string
}

// readClaim returns the claim of d's key, or ok false when there is none.
func (b *Backend) readClaim(ctx context.Context, d *slurmapi.JobDesc) (keyClaim, bool, error) {
	var cm corev1.ConfigMap
	err := b.c.Get(ctx, client.ObjectKey{Namespace: b.opts.Namespace, Name: submitKeyName(d.User, d.IdempotencyKey)}, &cm)
	if apierrors.IsNotFound(err) {
		return keyClaim{}, false, nil
	}
	if err != nil {
		return keyClaim{}, false, fmt.Errorf("read the claim of an %s: %w", slurmapi.IdempotencyKeyHeader, err)
	}
	id, err := strconv.ParseUint(cm.Data[submitKeyJob], 10, 32)
	if err != nil || id == 0 {
		return keyClaim{}, false, fmt.Errorf("claim %s/%s holds job %q, not a job id", cm.Namespace, cm.Name, cm.Data[submitKeyJob])
	}
	return keyClaim{job: uint32(id), bodyHash: cm.Data[submitKeyBody]}, true, nil
}

// claimKey records that d's key names job id. It returns the claim that
// holds: this one, or the one another submission with the same key stored
// first (created is then false).
func (b *Backend) claimKey(ctx context.Context, d *slurmapi.JobDesc, id uint32) (claim keyClaim, created bool, err error) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: submitKeyName(d.User, d.IdempotencyKey), Namespace: b.opts.Namespace,
			Labels: map[string]string{SubmitKeyLabel: "true", "app.kubernetes.io/managed-by": "sluice"},
		},
		Data: map[string]string{submitKeyJob: strconv.FormatUint(uint64(id), 10), submitKeyBody: d.BodyHash, submitKeyUser: d.User},
	}
	err = b.c.Create(ctx, cm)
	if err == nil {
		b.pruneClaims(time.Now())
		return keyClaim{job: id, bodyHash: d.BodyHash}, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return keyClaim{}, false, fmt.Errorf("claim an %s: %w", slurmapi.IdempotencyKeyHeader, err)
	}
	claim, ok, err := b.readClaim(ctx, d)
	if err == nil && !ok {
		err = fmt.Errorf("the claim of an %s was there and is gone", slurmapi.IdempotencyKeyHeader)
	}
	return claim, false, err
}

// replayed answers a submission whose key is claimed already: the claimed
// job's id when it is stored; a claim of a different body is refused.
// stored false means the claim's job was never stored (its submission died
// after claiming): the caller stores it now, under the claimed id.
func (b *Backend) replayed(ctx context.Context, d *slurmapi.JobDesc, claim keyClaim) (stored bool, err error) {
	if claim.bodyHash != d.BodyHash {
		return false, slurmapi.KeyReused(claim.job)
	}
	groups, err := b.podGroups(ctx, claim.job)
	if err != nil {
		return false, err
	}
	return len(groups) > 0, nil
}

// claimLifetime is how long a key is remembered: far longer than any client
// retries one submission, short enough that claims do not pile up.
const claimLifetime = 24 * time.Hour

// pruneClaims deletes the claims older than claimLifetime, at most once an
// hour per server, in the background of the submission that calls it.
func (b *Backend) pruneClaims(now time.Time) {
	b.pruneMu.Lock()
	due := now.Sub(b.prunedAt) >= time.Hour
	if due {
		b.prunedAt = now
	}
	b.pruneMu.Unlock()
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var list corev1.ConfigMapList
		if err := b.c.List(ctx, &list, client.InNamespace(b.opts.Namespace), client.HasLabels{SubmitKeyLabel}); err != nil {
			return // the next submission an hour on tries again
		}
		for i := range list.Items {
			if cm := &list.Items[i]; now.Sub(cm.CreationTimestamp.Time) > claimLifetime {
				_ = b.c.Delete(ctx, cm)
			}
		}
	}()
}
