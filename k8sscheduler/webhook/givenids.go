package webhook

import (
	"sync"
	"time"
)

// givenFor is how long the webhook remembers the job id it gave a bare pod: long enough
// for the API server to call it again for the same request (reinvocation, after a later
// webhook changed the pod), which must keep that id rather than take another.
const givenFor = 30 * time.Second

// givenIDs remembers the job ids lately given, by pod namespace/name. The zero value is
// ready to use.
type givenIDs struct {
	mu     sync.Mutex
	byPod  map[string]givenID
	pruned time.Time
}

type givenID struct {
	id uint32
	at time.Time
}

func (g *givenIDs) add(pod string, id uint32, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byPod == nil {
		g.byPod = map[string]givenID{}
	}
	if now.Sub(g.pruned) > time.Second { // at most one sweep a second, whatever the rate
		for k, v := range g.byPod {
			if now.Sub(v.at) > givenFor {
				delete(g.byPod, k)
			}
		}
		g.pruned = now
	}
	g.byPod[pod] = givenID{id: id, at: now}
}

// ours reports whether the webhook gave id to the pod within givenFor. A pod that came
// with any other id (or one given to another pod) is not spared: ids are Sluice's to give.
func (g *givenIDs) ours(pod string, id uint32, now time.Time) bool {
	if id == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.byPod[pod]
	return ok && v.id == id && now.Sub(v.at) <= givenFor
}
