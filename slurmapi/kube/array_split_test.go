package kube

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// readerCache is the lifecycle's informer cache read from a client: only
// Get and List, which is all a split reads.
type readerCache struct {
	cache.Cache
	r client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.r.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.r.List(ctx, list, opts...)
}

// arrayID is the id the test arrays were submitted under; the counter
// stands at firstTaskID, so ids from the split are told from it.
const arrayID, firstTaskID = 50, 100

// splitRig is a fake cluster holding the record of array spec (submitted
// as job arrayID) and a counter at firstTaskID, with a lifecycle whose
// writes go through funcs.
func splitRig(t *testing.T, spec string, funcs interceptor.Funcs) (*Lifecycle, client.Client) {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	record := PodGroupFor(&slurmapi.JobDesc{User: "alice", Account: "nlp", Script: "#!/bin/sh\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1, Array: spec}, arrayID)
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.PodGroup{}).
		WithObjects(record, counterConfigMap(firstTaskID)).Build()
	wrapped := interceptor.NewClient(c, funcs)
	l := &Lifecycle{cache: readerCache{r: c}, client: wrapped, deps: c, ids: NewJobIDs(c, "default", "ids", 10)}
	return l, c
}

// readRecord is the array's record as stored.
func readRecord(t *testing.T, c client.Client) *v1alpha1.PodGroup {
	t.Helper()
	var pg v1alpha1.PodGroup
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: Namespace("nlp"), Name: PodGroupName(arrayID)}, &pg); err != nil {
		t.Fatal(err)
	}
	return &pg
}

// taskIDsOf maps each split task's index to its job id, failing on an
// index split twice.
func taskIDsOf(t *testing.T, c client.Client) map[int]uint32 {
	t.Helper()
	var list v1alpha1.PodGroupList
	if err := c.List(context.Background(), &list, client.MatchingLabels{ArrayJobLabel: strconv.Itoa(arrayID)}); err != nil {
		t.Fatal(err)
	}
	ids := map[int]uint32{}
	for _, pg := range list.Items {
		index, err := strconv.Atoi(pg.Labels[ArrayTaskLabel])
		if err != nil {
			continue // the record
		}
		if _, twice := ids[index]; twice {
			t.Errorf("task %d split off twice", index)
		}
		id, _ := strconv.ParseUint(pg.Labels[v1alpha1.JobIDLabel], 10, 32)
		ids[index] = uint32(id)
		if pg.Name != PodGroupName(uint32(id)) || pg.Annotations[ArraySplitAnnotation] != "" || pg.Annotations[ArrayPendingAnnotation] != "" {
			t.Errorf("task %d: name %s, annotations %v", index, pg.Name, pg.Annotations)
		}
	}
	return ids
}

// TestArrayTasksTakeIDsWhenSplit: the submission took one id; the split
// gives the tasks it makes ids from the counter, in index order, and moves
// the pending list on, leaving no plan behind.
func TestArrayTasksTakeIDsWhenSplit(t *testing.T) {
	l, c := splitRig(t, "0-1000", interceptor.Funcs{})
	if err := l.splitReady(context.Background(), readRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	want := map[int]uint32{0: firstTaskID, 1: firstTaskID + 1, 2: firstTaskID + 2, 3: firstTaskID + 3}
	if got := taskIDsOf(t, c); !maps.Equal(got, want) {
		t.Errorf("split tasks %v, want %v (arraySplitAhead tasks, ids from the counter)", got, want)
	}
	record := readRecord(t, c)
	if record.Annotations[ArrayPendingAnnotation] != "4-1000" || record.Annotations[ArraySplitAnnotation] != "" {
		t.Errorf("record after the split: pending %q, plan %q", record.Annotations[ArrayPendingAnnotation], record.Annotations[ArraySplitAnnotation])
	}
	if next, err := l.ids.NextSlurm(context.Background(), 1); err != nil || next != firstTaskID+4 {
		t.Errorf("the next id after the split: %d (%v), want %d: the split took only its tasks' ids", next, err, firstTaskID+4)
	}
}

// TestArraySplitRetriedKeepsItsIDs: a split that fails after writing its
// plan (a crash, the API server refusing a create) is finished by the next
// attempt with the planned ids, even if the array was held meanwhile: no
// index gets a second id or a second task, and no id is taken again.
func TestArraySplitRetriedKeepsItsIDs(t *testing.T) {
	creates := 0
	fail := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if creates++; creates == 3 {
			return apierrors.NewServiceUnavailable("the API server went away")
		}
		return c.Create(ctx, obj, opts...)
	}}
	l, c := splitRig(t, "0-9", fail)
	if err := l.splitReady(context.Background(), readRecord(t, c)); err == nil {
		t.Fatal("the split with a failing create reported no error")
	}
	record := readRecord(t, c)
	if record.Annotations[ArraySplitAnnotation] == "" || record.Annotations[ArrayPendingAnnotation] != "4-9" {
		t.Fatalf("after the failure the record holds pending %q and plan %q, want 4-9 and the plan",
			record.Annotations[ArrayPendingAnnotation], record.Annotations[ArraySplitAnnotation])
	}
	if got := taskIDsOf(t, c); len(got) != 2 {
		t.Fatalf("tasks before the retry: %v, want the 2 created before the failure", got)
	}
	record.Spec.Slurm.Hold = true // scontrol hold after the split was planned
	if err := c.Update(context.Background(), record); err != nil {
		t.Fatal(err)
	}
	if err := l.splitReady(context.Background(), readRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	want := map[int]uint32{0: firstTaskID, 1: firstTaskID + 1, 2: firstTaskID + 2, 3: firstTaskID + 3}
	if got := taskIDsOf(t, c); !maps.Equal(got, want) {
		t.Errorf("tasks after the retry %v, want %v", got, want)
	}
	if plan := readRecord(t, c).Annotations[ArraySplitAnnotation]; plan != "" {
		t.Errorf("the finished split left its plan %q", plan)
	}
	if next, err := l.ids.NextSlurm(context.Background(), 1); err != nil || next != firstTaskID+4 {
		t.Errorf("the next id: %d (%v), want %d: the retry took no new ids", next, err, firstTaskID+4)
	}
}

// TestArrayCancelledMidSplitEndsItsTasks: an array cancelled between the
// plan and the end of its split (scancel listed the tasks before these
// were created) has the planned tasks that exist ended with it, and none
// created.
func TestArrayCancelledMidSplitEndsItsTasks(t *testing.T) {
	creates := 0
	fail := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if creates++; creates == 2 {
			return errors.New("crash")
		}
		return c.Create(ctx, obj, opts...)
	}}
	l, c := splitRig(t, "0-9", fail)
	if err := l.splitReady(context.Background(), readRecord(t, c)); err == nil {
		t.Fatal("the split with a failing create reported no error")
	}
	record := readRecord(t, c)
	record.Status.Phase = v1alpha1.PodGroupCancelled // scancel of the array
	if err := c.Status().Update(context.Background(), record); err != nil {
		t.Fatal(err)
	}
	if err := l.splitReady(context.Background(), readRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.PodGroupList
	if err := c.List(context.Background(), &list, client.HasLabels{ArrayTaskLabel}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Status.Phase != v1alpha1.PodGroupCancelled {
		t.Errorf("tasks of the array cancelled mid-split: %v, want task 0 alone, Cancelled", list.Items)
	}
	if plan := readRecord(t, c).Annotations[ArraySplitAnnotation]; plan != "" {
		t.Errorf("the cancelled record kept its plan %q", plan)
	}
}

// TestArrayOfOneIndexTakesOneID: "5,5,5,5,5,5,5,5,5,5" is one task, which
// the record itself becomes, under the array's id: no id beyond the one
// the submission took.
func TestArrayOfOneIndexTakesOneID(t *testing.T) {
	l, c := splitRig(t, "5,5,5,5,5,5,5,5,5,5", interceptor.Funcs{})
	if err := l.splitReady(context.Background(), readRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	if got := taskIDsOf(t, c); !maps.Equal(got, map[int]uint32{5: arrayID}) {
		t.Errorf("tasks %v, want task 5 as the record, job %d", got, arrayID)
	}
	if next, err := l.ids.NextSlurm(context.Background(), 1); err != nil || next != firstTaskID {
		t.Errorf("the next id: %d (%v), want %d", next, err, firstTaskID)
	}
}

// TestArrayTaskCancelWaitsForASplit: scancel of a task being split, or of
// the last pending index while a split is under way, is a conflict (the
// REST API retries it once, then answers 409); other indices are not.
func TestArrayTaskCancelWaitsForASplit(t *testing.T) {
	pg := PodGroupFor(&slurmapi.JobDesc{Account: "nlp", Nodes: 1, Tasks: 1, CPUsPerTask: 1, Array: "0-9"}, arrayID)
	pg.Annotations[ArraySplitAnnotation] = formatPlan([]plannedTask{{0, 100}, {1, 101}})
	for _, tc := range []struct {
		index    int
		pending  []int
		conflict bool
	}{
		{0, []int{2, 3}, true},
		{2, []int{2, 3}, false},
		{9, []int{9}, true},
	} {
		err := splitUnderWay(pg, tc.index, tc.pending)
		if apierrors.IsConflict(err) != tc.conflict {
			t.Errorf("cancel of task %d, pending %v: %v, want conflict=%v", tc.index, tc.pending, err, tc.conflict)
		}
	}
	delete(pg.Annotations, ArraySplitAnnotation)
	if err := splitUnderWay(pg, 0, []int{0}); err != nil {
		t.Errorf("no split under way: %v", err)
	}
}
