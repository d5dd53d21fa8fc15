package v1alpha1

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// What the scheduler writes on a batch reads back as the same reasons per job, in one
// short line for like jobs, the same line whatever order the jobs came in.
func TestPendingReasonsRoundTrip(t *testing.T) {
	resources := BatchedWait{Reason: "Resources", Message: "needs 1 GPU in partition h100; no node has that free now"}
	priority := BatchedWait{Reason: "Priority", Message: "capacity went to higher-ranked work"}
	for _, tc := range []struct {
		name  string
		waits map[string]BatchedWait
		want  string // the annotation; "" when nothing is said
		read  map[string]BatchedWait
	}{
		{name: "nothing waits", waits: nil, want: ""},
		{name: "like jobs share one entry, ids in order",
			waits: map[string]BatchedWait{"43": resources, "41": resources, "42": resources},
			want:  `[{"reason":"Resources","message":"needs 1 GPU in partition h100; no node has that free now","jobs":[41,42,43]}]`,
			read:  map[string]BatchedWait{"41": resources, "42": resources, "43": resources}},
		{name: "one entry per reason and message, sorted",
			waits: map[string]BatchedWait{"7": resources, "8": priority, "9": {Reason: "Resources", Message: "gang needs 2 tasks"}},
			want: `[{"reason":"Priority","message":"capacity went to higher-ranked work","jobs":[8]},` +
				`{"reason":"Resources","message":"gang needs 2 tasks","jobs":[9]},` +
				`{"reason":"Resources","message":"needs 1 GPU in partition h100; no node has that free now","jobs":[7]}]`,
			read: map[string]BatchedWait{"7": resources, "8": priority, "9": {Reason: "Resources", Message: "gang needs 2 tasks"}}},
		{name: "a key that is no job id, or a wait without reason, is left out",
			waits: map[string]BatchedWait{"x": resources, "5": {Message: "?"}, "6": {Reason: "Priority"}},
			want:  `[{"reason":"Priority","jobs":[6]}]`,
			read:  map[string]BatchedWait{"6": {Reason: "Priority"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FormatPendingReasons(tc.waits)
			if got != tc.want {
				t.Fatalf("annotation\n got %s\nwant %s", got, tc.want)
			}
			read, err := ParsePendingReasons(got)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(read, tc.read) {
				t.Errorf("read back %v, want %v", read, tc.read)
			}
		})
	}
}

// The annotation stays within its bound however many jobs wait and however long their
// messages: long messages are cut, then left out, then the highest job ids are.
func TestPendingReasonsBound(t *testing.T) {
	many := func(n int, msg func(i int) string) map[string]BatchedWait {
		w := map[string]BatchedWait{}
		for i := range n {
			w[fmt.Sprint(1_000_000_000+i)] = BatchedWait{Reason: "Resources", Message: msg(i)}
		}
		return w
	}
	long := strings.Repeat("€", 300) // 900 bytes, 3 per character: 256 falls inside one
	for _, tc := range []struct {
		name         string
		waits        map[string]BatchedWait
		messages     bool // the messages are kept (cut)
		allJobs      bool
		lowestJobsIn bool
	}{
		{name: "a long message is cut between characters", waits: many(3, func(int) string { return long }), messages: true, allJobs: true, lowestJobsIn: true},
		{name: "many distinct messages: left out", waits: many(2000, func(i int) string { return fmt.Sprintf("needs %d GPUs %s", i, long[:99]) }), allJobs: true, lowestJobsIn: true},
		{name: "more job ids than the bound holds: the highest are left out", waits: many(5000, func(int) string { return "" }), lowestJobsIn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FormatPendingReasons(tc.waits)
			if len(got) > PendingReasonsMaxBytes {
				t.Fatalf("annotation of %d bytes, bound %d", len(got), PendingReasonsMaxBytes)
			}
			read, err := ParsePendingReasons(got)
			if err != nil {
				t.Fatal(err)
			}
			if tc.allJobs != (len(read) == len(tc.waits)) {
				t.Errorf("%d of %d jobs kept, want all: %v", len(read), len(tc.waits), tc.allJobs)
			}
			if _, ok := read["1000000000"]; tc.lowestJobsIn && !ok {
				t.Error("the lowest job id was left out")
			}
			for id, w := range read {
				if w.Reason != "Resources" {
					t.Errorf("job %s reads reason %q", id, w.Reason)
				}
				if (w.Message != "") != tc.messages {
					t.Errorf("job %s message %q, want one: %v", id, w.Message, tc.messages)
				}
				if tc.messages && (len(w.Message) > pendingMessageMaxBytes || !strings.HasPrefix(long, w.Message)) {
					t.Errorf("job %s message cut to %d bytes, not a prefix of whole characters", id, len(w.Message))
				}
			}
		})
	}
}

// A value the scheduler did not write (edited by hand) is an error, not a panic or a
// reason made up.
func TestPendingReasonsParseErrors(t *testing.T) {
	for _, v := range []string{"{", `{"reason":"Resources"}`, `[{"reason":"Resources","jobs":["41"]}]`} {
		if got, err := ParsePendingReasons(v); err == nil {
			t.Errorf("%s read as %v, want an error", v, got)
		}
	}
}
