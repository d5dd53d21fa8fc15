package recorder

import (
	"slices"
	"testing"
)

func TestLinkSet(t *testing.T) {
	type step struct {
		add, remove string
		wantEmpty   bool
		want        []string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one pod", []step{{add: "a", want: []string{"a"}}, {remove: "a", wantEmpty: true}}},
		{"the same pod twice stays one", []step{{add: "a"}, {add: "a", want: []string{"a"}}, {remove: "a", wantEmpty: true}}},
		{"a second pod makes a map", []step{{add: "a"}, {add: "b", want: []string{"a", "b"}}, {add: "c", want: []string{"a", "b", "c"}}}},
		{"back to one after a removal", []step{{add: "a"}, {add: "b"}, {remove: "a", want: []string{"b"}}, {remove: "b", wantEmpty: true}}},
		{"removing a pod not there", []step{{add: "a"}, {remove: "z", want: []string{"a"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s linkSet
			for i, st := range tc.steps {
				if st.add != "" {
					s.add(st.add)
				} else if empty := s.remove(st.remove); empty != st.wantEmpty {
					t.Fatalf("step %d: remove(%q) empty=%v, want %v", i, st.remove, empty, st.wantEmpty)
				}
				if st.want == nil && !st.wantEmpty {
					continue
				}
				got := slices.Sorted(s.all())
				if !slices.Equal(got, st.want) {
					t.Fatalf("step %d: pods %v, want %v", i, got, st.want)
				}
			}
		})
	}
	var none *linkSet
	if got := slices.Collect(none.all()); len(got) != 0 {
		t.Fatalf("a missing link yields %v", got)
	}
}
