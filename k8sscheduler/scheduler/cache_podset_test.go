package scheduler

import (
	"maps"
	"slices"
	"testing"
)

func TestPodSetHoldsPodsByName(t *testing.T) {
	type op struct {
		put  string // a pod to add or replace, by name
		drop string
	}
	tests := []struct {
		name   string
		ops    []op
		want   []string
		hasMap bool
	}{
		{"empty", nil, nil, false},
		{"one pod, no map", []op{{put: "a"}}, []string{"a"}, false},
		{"the same pod again", []op{{put: "a"}, {put: "a"}}, []string{"a"}, false},
		{"two pods", []op{{put: "a"}, {put: "b"}}, []string{"a", "b"}, true},
		{"back to one: the map goes", []op{{put: "a"}, {put: "b"}, {drop: "a"}}, []string{"b"}, false},
		{"three, one dropped", []op{{put: "a"}, {put: "b"}, {put: "c"}, {drop: "b"}}, []string{"a", "c"}, true},
		{"an unknown pod dropped", []op{{put: "a"}, {drop: "x"}}, []string{"a"}, false},
		{"the last dropped", []op{{put: "a"}, {drop: "a"}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s podSet
			held := map[string]*podEntry{}
			for _, o := range tt.ops {
				if o.put != "" {
					p := &podEntry{name: o.put}
					held[o.put] = p
					s.put(p)
				} else {
					delete(held, o.drop)
					s.drop(o.drop)
				}
			}
			got := map[string]*podEntry{}
			for name, p := range s.all() {
				got[name] = p
			}
			if !maps.Equal(got, held) || s.len() != len(held) || !slices.Equal(slices.Sorted(s.names()), tt.want) {
				t.Errorf("holds %v (len %d), want %v", got, s.len(), tt.want)
			}
			for name, p := range held {
				if s.get(name) != p {
					t.Errorf("get(%s) is not the pod put last", name)
				}
			}
			if s.get("x") != nil || (s.many != nil) != tt.hasMap {
				t.Errorf("get of an unknown pod %v; has a map %v, want %v", s.get("x"), s.many != nil, tt.hasMap)
			}
		})
	}
}
