package recorder

import "iter"

// linkSet is the pods (namespace/name) one link ties to a group. Most groups are groups
// of one, and a map holding one key costs about 250 bytes (4 MB at 16,000 pods): one
// pod is held without a map, which is made when a second comes.
type linkSet struct {
	one  string          // the only pod, when many is nil
	many map[string]bool // two or more pods
}

func (s *linkSet) add(pk string) {
	switch {
	case s.many != nil:
		s.many[pk] = true
	case s.one == "" || s.one == pk:
		s.one = pk
	default:
		s.many = map[string]bool{s.one: true, pk: true}
		s.one = ""
	}
}

// remove drops pk and says whether the set is empty now.
func (s *linkSet) remove(pk string) (empty bool) {
	if s.many == nil {
		if s.one == pk {
			s.one = ""
		}
		return s.one == ""
	}
	delete(s.many, pk)
	if len(s.many) == 1 {
		for k := range s.many {
			s.one = k
		}
		s.many = nil
	}
	return false
}

// all yields each pod, in no order.
func (s *linkSet) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		if s == nil {
			return
		}
		if s.many == nil {
			if s.one != "" {
				yield(s.one)
			}
			return
		}
		for pk := range s.many {
			if !yield(pk) {
				return
			}
		}
	}
}
