package slurmapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// IdempotencyKeyHeader names the header a client sets on POST job/submit so
// that retrying a submission whose answer it never got (a dropped
// connection, a replica killed mid-request, a 5xx) cannot create a second
// job: the backend remembers the key durably with the job id, and a retry
// with the same key by the same user is answered with that id. A Sluice
// extension (docs/rest-compatibility.md); `sluice sbatch` sends one.
const IdempotencyKeyHeader = "Idempotency-Key"

// maxIdempotencyKey bounds the header, as the IETF draft's implementations
// do; a UUID or a 32-byte hex string fits easily.
const maxIdempotencyKey = 255

// idempotencyKey reads the header of r: "" when there is none. The body's
// hash goes with it, so a retry can be told from another submission that
// reuses the key (ErrKeyReused).
func idempotencyKey(r *http.Request, body []byte) (key, bodyHash string, e *Error) {
	key = r.Header.Get(IdempotencyKeyHeader)
	if key == "" {
		return "", "", nil
	}
	if len(key) > maxIdempotencyKey {
		return "", "", BadRequest(ErrRestBadRequest, IdempotencyKeyHeader, "the %s header is %d bytes, over the %d byte limit", IdempotencyKeyHeader, len(key), maxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", "", BadRequest(ErrRestBadRequest, IdempotencyKeyHeader, "the %s header may hold only printable ASCII characters", IdempotencyKeyHeader)
		}
	}
	sum := sha256.Sum256(body)
	return key, hex.EncodeToString(sum[:]), nil
}

// KeyReused is the answer to a submission whose Idempotency-Key an earlier,
// different submission of the same user already used: the key names that
// job, and this body is not its retry.
func KeyReused(firstJob uint32) *Error {
	return Errorf(http.StatusUnprocessableEntity, ErrRestInvalidJobs, IdempotencyKeyHeader,
		"this %s was already used by a different submission (job %d); use a new key for a new job", IdempotencyKeyHeader, firstJob)
}
