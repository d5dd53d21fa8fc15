package scheduler

import "iter"

// podSet is a group's pods by name. Most groups are groups of one (a bare pod, a Slurm job
// of one task), and a map holding one pod costs 256 bytes (4 MB at 16,000 pods): one pod
// is held without a map, which is made when a second comes.
type podSet struct {
	one  *podEntry            // the only pod, when many is nil
	many map[string]*podEntry // two or more pods
}

func (s *podSet) get(name string) *podEntry {
	if s.many != nil {
		return s.many[name]
	}
	if s.one != nil && s.one.name == name {
		return s.one
	}
	return nil
}

func (s *podSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	if s.one != nil {
		return 1
	}
	return 0
}

// put adds p or replaces the pod of its name.
func (s *podSet) put(p *podEntry) {
	switch {
	case s.many != nil:
		s.many[p.name] = p
	case s.one == nil || s.one.name == p.name:
		s.one = p
	default:
		s.many = map[string]*podEntry{s.one.name: s.one, p.name: p}
		s.one = nil
	}
}

// drop removes the named pod; a map left with one pod goes.
func (s *podSet) drop(name string) {
	if s.many == nil {
		if s.one != nil && s.one.name == name {
			s.one = nil
		}
		return
	}
	delete(s.many, name)
	if len(s.many) == 1 {
		for _, p := range s.many {
			s.one = p
		}
		s.many = nil
	}
}

// all yields each pod with its name, in no order.
func (s *podSet) all() iter.Seq2[string, *podEntry] {
	return func(yield func(string, *podEntry) bool) {
		if s.many == nil {
			if s.one != nil {
				yield(s.one.name, s.one)
			}
			return
		}
		for name, p := range s.many {
			if !yield(name, p) {
				return
			}
		}
	}
}

// names yields the pods' names, in no order.
func (s *podSet) names() iter.Seq[string] {
	return func(yield func(string) bool) {
		for name := range s.all() {
			if !yield(name) {
				return
			}
		}
	}
}
