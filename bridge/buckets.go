package bridge

// bucketSet groups nodes into numbered buckets (free devices, free portion) so that
// placement looks only at nodes that can fit, in strategy order, instead of scanning every
// node. Moving a node is O(1): buckets are unordered and removal swaps in the last node.
type bucketSet struct {
	lists [][]int32
	at    []int32 // bucket of each node (global index), -1 when in none
	pos   []int32
}

func newBucketSet(buckets, nodes int) bucketSet {
	s := bucketSet{lists: make([][]int32, buckets), at: make([]int32, nodes), pos: make([]int32, nodes)}
	for i := range s.at {
		s.at[i] = -1
	}
	return s
}

// move puts node n into bucket to (-1: none).
func (s *bucketSet) move(n, to int32) {
	from := s.at[n]
	if from == to {
		return
	}
	if from >= 0 {
		l := s.lists[from]
		p := s.pos[n]
		last := l[len(l)-1]
		l[p] = last
		s.pos[last] = p
		s.lists[from] = l[:len(l)-1]
	}
	if to >= 0 {
		s.pos[n] = int32(len(s.lists[to]))
		s.lists[to] = append(s.lists[to], n)
	}
	s.at[n] = to
}
