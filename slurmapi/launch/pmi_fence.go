package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// pathPMIFence is where srun sends a node of a PMI step the merged keys
// of a fence (pmiFenceDone).
const pathPMIFence = "/v1/pmi-fence"

// pmiHub is srun's part of PMI: it joins the nodes' fences.
type pmiHub struct {
	r   *stepRun
	typ string

	// Each node of the step: its host and its index in the job.
	hosts   []string
	jobNode []int

	mu      sync.Mutex
	fences  map[int]map[int]map[string]string // fence -> node -> its keys
	aborted bool
}

// newPMIHub is the hub of r's step for MPI type typ; nil without PMI.
func newPMIHub(r *stepRun, typ string) *pmiHub {
	if typ != mpiPMI2 && typ != mpiPMIx {
		return nil
	}
	return &pmiHub{r: r, typ: typ, fences: map[int]map[int]map[string]string{}}
}

// addTo gives each node's part of the step what it needs to serve PMI,
// the step's process mapping from where its tasks are.
func (h *pmiHub) addTo(specs []StepSpec) {
	if h == nil {
		return
	}
	var nodeOf []int
	for i, s := range specs {
		for _, t := range s.Tasks {
			for t.ProcID >= len(nodeOf) {
				nodeOf = append(nodeOf, -1)
			}
			nodeOf[t.ProcID] = i
		}
	}
	m := &StepMPI{Type: h.typ, Mapping: processMapping(nodeOf)}
	if h.typ == mpiPMIx {
		m.Ranks = make([][]int, len(specs))
		for i, s := range specs {
			for _, t := range s.Tasks {
				m.Ranks[i] = append(m.Ranks[i], t.ProcID)
			}
		}
	}
	for i := range specs {
		specs[i].MPI = m
		host := specs[i].Nodes[specs[i].NodeIndex]
		h.hosts = append(h.hosts, host)
		j := slices.Index(h.r.job.Hosts, host)
		if j < 0 {
			j = i
		}
		h.jobNode = append(h.jobNode, j)
	}
}

// handle takes a node's PMI news.
func (h *pmiHub) handle(m *pmiMsg) {
	if h == nil {
		return
	}
	r := h.r
	if a := m.Abort; a != nil {
		h.mu.Lock()
		first := !h.aborted
		h.aborted = true
		h.mu.Unlock()
		if !first {
			return
		}
		code := ""
		if a.Code != 0 {
			code = fmt.Sprintf(" (exit code %d)", a.Code)
		}
		fmt.Fprintf(r.stderr, "srun: error: %s: task %d: %s%s: terminating StepId=%s.%d\n",
			h.host(m.Node), a.Rank, a.Reason, code, r.job.ID, r.step)
		r.kill()
		return
	}
	if m.Fence <= 0 {
		return
	}
	h.mu.Lock()
	got := h.fences[m.Fence]
	if got == nil {
		got = map[int]map[string]string{}
		h.fences[m.Fence] = got
	}
	got[m.Node] = m.KVS
	if len(got) < len(h.jobNode) || h.aborted {
		h.mu.Unlock()
		return
	}
	delete(h.fences, m.Fence)
	h.mu.Unlock()
	merged := map[string]string{}
	for node := range h.jobNode {
		for k, v := range got[node] {
			merged[k] = v
		}
	}
	go h.deliver(m.Fence, merged)
}

// deliver sends every node of the step the merged keys of a fence; srun's
// own node's server is in this process.
func (h *pmiHub) deliver(fence int, kvs map[string]string) {
	r := h.r
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for node, jobNode := range h.jobNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if jobNode == r.job.Node {
				if local := pmiNodeFor(r.job.ID, r.step); local == nil {
					err = fmt.Errorf("no PMI server for this node")
				} else {
					err = local.fenceDone(fence, kvs)
				}
			} else {
				err = r.peers.call(ctx, jobNode, pathPMIFence, pmiFenceDone{JobID: r.job.ID, Step: r.step, Fence: fence, KVS: kvs, Nonce: nonce()})
			}
			if err != nil {
				h.mu.Lock()
				first := !h.aborted
				h.aborted = true
				h.mu.Unlock()
				if first {
					fmt.Fprintf(r.stderr, "srun: error: %s: PMI fence %d: %v: terminating StepId=%s.%d\n", h.host(node), fence, err, r.job.ID, r.step)
					r.kill()
				}
			}
		}()
	}
	wg.Wait()
}

func (h *pmiHub) host(node int) string {
	if node >= 0 && node < len(h.hosts) {
		return h.hosts[node]
	}
	return fmt.Sprintf("node %d", node)
}

// pmiFence is a launcher's end of a fence: srun's merged keys for the
// node's tasks waiting in it.
func (s *server) pmiFence(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var d pmiFenceDone
	if err := json.Unmarshal(b, &d); err != nil || d.JobID != s.job.ID {
		http.Error(w, fmt.Sprintf("launcher: not a PMI fence of job %s", s.job.ID), http.StatusBadRequest)
		return
	}
	n := pmiNodeFor(d.JobID, d.Step)
	if n == nil {
		http.Error(w, fmt.Sprintf("launcher: step %s.%d serves no PMI here", d.JobID, d.Step), http.StatusNotFound)
		return
	}
	if err := n.fenceDone(d.Fence, d.KVS); err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
