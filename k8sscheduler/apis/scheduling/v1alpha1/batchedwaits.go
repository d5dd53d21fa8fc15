package v1alpha1

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PendingReasonsAnnotation, on a submit batch, says why the batch's waiting jobs wait: what
// the scheduler would write into each one's Scheduled condition if its PodGroup were
// stored. Its value is a JSON list of {"reason", "message", "jobs": [job ids]}, one entry
// per distinct reason and message, so a batch of like jobs waiting for GPUs costs one short
// line, e.g. [{"reason":"Resources","message":"needs 1 GPU ...","jobs":[41,42,43]}]. The
// scheduler is its only writer (k8sscheduler/scheduler/batchreasons.go); the Slurm API reads
// it into the batched jobs' PodGroups (slurmapi/kube/submitbatch_read.go). A job it does not
// list reads Slurm's reason None; an entry for a job that has since been stored is stale and
// ignored (the stored PodGroup says why).
const PendingReasonsAnnotation = "sluice.dev/pending-reasons"

const (
	// PendingReasonsMaxBytes bounds the annotation. The API server allows 256 KiB of
	// annotations per object and etcd about 1.5 MiB per object; a batch's data is at most
	// 700 KiB (slurmapi/kube submitBatchBytes), so a batch with its reasons stays well under
	// both. A batch's jobs fit without messages with room to spare (each job id costs at
	// most 11 bytes and a batch holds at most a few thousand jobs); past the bound the
	// messages are left out first, then job ids (the last reasons' first, highest first),
	// which then read None.
	PendingReasonsMaxBytes = 32 << 10
	// pendingMessageMaxBytes cuts a message: the core's are one line.
	pendingMessageMaxBytes = 256
)

// BatchedWait is why one batched job waits.
// +kubebuilder:object:generate=false
type BatchedWait struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Condition is the Scheduled condition a stored PodGroup would carry for w.
func (w BatchedWait) Condition() metav1.Condition {
	return metav1.Condition{Type: PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: w.Reason, Message: w.Message}
}

// batchedWaitEntry is one element of the annotation's list.
// +kubebuilder:object:generate=false
type batchedWaitEntry struct {
	BatchedWait
	Jobs []uint64 `json:"jobs"`
}

// FormatPendingReasons writes waits (by job id) as a PendingReasonsAnnotation value, the
// same value for the same waits, at most PendingReasonsMaxBytes long; "" when there is
// nothing to say. Keys that are not job ids are left out.
func FormatPendingReasons(waits map[string]BatchedWait) string {
	entries := groupWaits(waits, true)
	out := encodeWaits(entries)
	if len(out) <= PendingReasonsMaxBytes {
		return out
	}
	return encodeWaits(fitWaits(groupWaits(waits, false)))
}

// fitWaits keeps of entries (without messages) the job ids that fit in
// PendingReasonsMaxBytes, lowest first in each entry, counting each entry's and each id's
// bytes as encodeWaits writes them (a comma each, counted whether needed or not).
func fitWaits(entries []batchedWaitEntry) []batchedWaitEntry {
	budget := PendingReasonsMaxBytes - len("[]")
	var out []batchedWaitEntry
	for _, e := range entries {
		reason, _ := json.Marshal(e.Reason) // a string: cannot fail
		cost := len(`{"reason":,"jobs":[]},`) + len(reason)
		if cost > budget {
			break
		}
		budget -= cost
		n := 0
		for _, id := range e.Jobs {
			c := len(strconv.FormatUint(id, 10)) + 1
			if c > budget {
				break
			}
			budget -= c
			n++
		}
		if n == 0 {
			break
		}
		out = append(out, batchedWaitEntry{BatchedWait: e.BatchedWait, Jobs: e.Jobs[:n]})
		if n < len(e.Jobs) {
			break
		}
	}
	return out
}

// groupWaits lists waits by reason and message (or reason alone), in a fixed order.
func groupWaits(waits map[string]BatchedWait, messages bool) []batchedWaitEntry {
	by := map[BatchedWait][]uint64{}
	for key, w := range waits {
		id, err := ParseJobID(key)
		if err != nil || w.Reason == "" {
			continue
		}
		if messages {
			w.Message = cutMessage(w.Message)
		} else {
			w.Message = ""
		}
		by[w] = append(by[w], uint64(id))
	}
	entries := make([]batchedWaitEntry, 0, len(by))
	for w, jobs := range by {
		slices.Sort(jobs)
		entries = append(entries, batchedWaitEntry{BatchedWait: w, Jobs: jobs})
	}
	slices.SortFunc(entries, func(a, b batchedWaitEntry) int {
		return cmp.Or(cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
	return entries
}

func encodeWaits(entries []batchedWaitEntry) string {
	if len(entries) == 0 {
		return ""
	}
	b, _ := json.Marshal(entries) // strings and numbers: cannot fail
	return string(b)
}

// cutMessage is m at most pendingMessageMaxBytes long, cut between characters.
func cutMessage(m string) string {
	if len(m) <= pendingMessageMaxBytes {
		return m
	}
	cut := pendingMessageMaxBytes
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}

// ParsePendingReasons reads a PendingReasonsAnnotation value into the waits by job id;
// an empty value says nothing.
func ParsePendingReasons(value string) (map[string]BatchedWait, error) {
	if value == "" {
		return nil, nil
	}
	var entries []batchedWaitEntry
	if err := json.Unmarshal([]byte(value), &entries); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", PendingReasonsAnnotation, err)
	}
	waits := map[string]BatchedWait{}
	for _, e := range entries {
		for _, id := range e.Jobs {
			waits[strconv.FormatUint(id, 10)] = e.BatchedWait
		}
	}
	return waits, nil
}
