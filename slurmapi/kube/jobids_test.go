package kube

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sluicehq/sluice/slurmapi"
)

// counterAt is a fake cluster whose job id counter (default/ids) stands at next.
func counterAt(t *testing.T, next uint64) client.Client {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(counterConfigMap(next)).Build()
}

// counterConfigMap is the job id counter default/ids standing at next.
func counterConfigMap(next uint64) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ids"},
		Data: map[string]string{counterKey: strconv.FormatUint(next, 10)}}
}

// storedCounter reads the counter as the ConfigMap holds it.
func storedCounter(t *testing.T, c client.Client) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "ids"}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[counterKey]
}

// TestSlurmIDsStopAtTheirCeiling: Slurm jobs take ids up to the ceiling and
// are then refused with ErrJobIDsUsedUp, without moving the counter, while
// Kubernetes workloads go on taking the ids above it.
func TestSlurmIDsStopAtTheirCeiling(t *testing.T) {
	ctx := context.Background()
	c := counterAt(t, uint64(DefaultMaxSlurmJobID)-1)
	ids := NewJobIDs(c, "default", "ids", 100)
	for _, want := range []uint32{DefaultMaxSlurmJobID - 1, DefaultMaxSlurmJobID} {
		if got, err := ids.NextSlurm(ctx, 1); err != nil || got != want {
			t.Fatalf("NextSlurm: %d (%v), want %d", got, err, want)
		}
	}
	_, err := ids.NextSlurm(ctx, 1)
	var used *IDsUsedUpError
	if !errors.Is(err, ErrJobIDsUsedUp) || !errors.As(err, &used) || !used.Slurm || used.Ceiling != DefaultMaxSlurmJobID {
		t.Fatalf("NextSlurm past the ceiling: %v, want an IDsUsedUpError for the Slurm ceiling", err)
	}
	if got, err := ids.Next(ctx); err != nil || got != DefaultMaxSlurmJobID+1 {
		t.Errorf("Next (a Kubernetes workload) past the Slurm ceiling: %d (%v), want %d", got, err, DefaultMaxSlurmJobID+1)
	}

	// Another server, whose first block would start past the ceiling, writes nothing.
	other := NewJobIDs(c, "default", "ids", 100)
	before := storedCounter(t, c)
	if _, err := other.NextSlurm(ctx, 1); !errors.Is(err, ErrJobIDsUsedUp) {
		t.Errorf("a second server's NextSlurm past the ceiling: %v", err)
	}
	if after := storedCounter(t, c); after != before {
		t.Errorf("a refused NextSlurm moved the counter from %s to %s", before, after)
	}
}

// TestSlurmIDsTakeNOnlyBelowTheCeiling: n consecutive ids are given only
// when all n fit under the ceiling; fewer still fit afterwards.
func TestSlurmIDsTakeNOnlyBelowTheCeiling(t *testing.T) {
	ctx := context.Background()
	ids := NewJobIDs(counterAt(t, 999), "default", "ids", 10)
	ids.LimitSlurm(1000)
	if _, err := ids.NextSlurm(ctx, 3); !errors.Is(err, ErrJobIDsUsedUp) {
		t.Fatalf("3 ids from 999 under ceiling 1000: %v, want ErrJobIDsUsedUp", err)
	}
	if got, err := ids.NextSlurm(ctx, 2); err != nil || got != 999 {
		t.Fatalf("2 ids from 999 under ceiling 1000: %d (%v)", got, err)
	}
}

// TestJobIDsUsedUpAtTheTop: the counter never hands out an id past
// LastJobID (2^31-1, the int32 of Slurm's OpenAPI job_id): the block is cut
// there and the next call, for any caller, is ErrJobIDsUsedUp, as it is for
// a counter an older server left past it and for a new counter above a
// ledger that used every id.
func TestJobIDsUsedUpAtTheTop(t *testing.T) {
	ctx := context.Background()
	c := counterAt(t, uint64(LastJobID)-1)
	ids := NewJobIDs(c, "default", "ids", 100)
	for _, want := range []uint32{LastJobID - 1, LastJobID} {
		if got, err := ids.Next(ctx); err != nil || got != want {
			t.Fatalf("Next: %d (%v), want %d", got, err, want)
		}
	}
	if got := storedCounter(t, c); got != strconv.FormatUint(uint64(LastJobID)+1, 10) {
		t.Errorf("counter after the last block: %s, want %d", got, uint64(LastJobID)+1)
	}
	_, err := ids.Next(ctx)
	var used *IDsUsedUpError
	if !errors.As(err, &used) || used.Slurm || used.Ceiling != LastJobID {
		t.Errorf("Next past LastJobID: %v, want an IDsUsedUpError at LastJobID", err)
	}
	if _, err := NewJobIDs(counterAt(t, 1<<32-1), "default", "ids", 100).Next(ctx); !errors.Is(err, ErrJobIDsUsedUp) {
		t.Errorf("a counter left at 2^32-1: %v, want ErrJobIDsUsedUp", err)
	}

	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	fresh := NewJobIDs(fake.NewClientBuilder().WithScheme(scheme).Build(), "default", "ids", 100)
	fresh.StartAbove(func(context.Context) (uint32, error) { return LastJobID, nil })
	if _, err := fresh.Next(ctx); !errors.Is(err, ErrJobIDsUsedUp) {
		t.Errorf("a new counter above a ledger that used every id: %v, want ErrJobIDsUsedUp", err)
	}
}

// TestSubmitWithoutIDsIs429: the REST answer to a used-up Slurm id space is
// a 4xx with slurmctld's EAGAIN and a description naming the setting, never
// a 500; any other error passes unchanged.
func TestSubmitWithoutIDsIs429(t *testing.T) {
	err := slurmIDsUsedUp(&IDsUsedUpError{Counter: client.ObjectKey{Namespace: "default", Name: "ids"}, Ceiling: 1000, Slurm: true})
	var e *slurmapi.Error
	if !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || e.Number != slurmapi.ErrAgain ||
		e.Short != "Resource temporarily unavailable" {
		t.Fatalf("used-up ids answer %v, want 429 with error 11", err)
	}
	for _, want := range []string{"1000", "rest.maxJobId"} {
		if !strings.Contains(e.Description, want) {
			t.Errorf("description %q does not name %s", e.Description, want)
		}
	}
	other := errors.New("read job id counter: boom")
	if got := slurmIDsUsedUp(other); got != other {
		t.Errorf("another error became %v", got)
	}
}
