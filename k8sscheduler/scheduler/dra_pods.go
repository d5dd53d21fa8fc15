package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// draAsk is what a pod's resource claims ask of its node: the claims still to be
// allocated (for where they could be met at all), and the nodes that claims allocated
// already (shared ones) tie the pod to. Pods whose claims ask alike (a gang's claims made
// from one template) share one key, so the nodes are found once for all of them.
type draAsk struct {
	key     string
	pending []*resourceapi.ResourceClaim
	bound   []*nodeaffinity.LazyErrorNodeSelector
	text    string
}

// claimKeys names the ResourceClaims of a pod, by namespace/name, in its spec's order. A
// claim made from a template is named in the pod's status once the resource claim
// controller has made it; until then wait says which.
func claimKeys(pod *corev1.Pod) (keys []string, wait string) {
	for _, pc := range pod.Spec.ResourceClaims {
		switch {
		case pc.ResourceClaimName != nil:
			keys = append(keys, pod.Namespace+"/"+*pc.ResourceClaimName)
		case pc.ResourceClaimTemplateName != nil:
			name := ""
			for _, st := range pod.Status.ResourceClaimStatuses {
				if st.Name == pc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
			if name == "" {
				return nil, fmt.Sprintf("waiting for its resource claim %q to be made from ResourceClaimTemplate %s", pc.Name, *pc.ResourceClaimTemplateName)
			}
			keys = append(keys, pod.Namespace+"/"+name)
		}
	}
	return keys, ""
}

// fillDRA completes a pod's conversion with what its resource claims ask: the GPUs the
// core counts (devices of a GPU class, exactly counted) and the nodes that could meet the
// claims. A claim that is missing or malformed leaves the pod waiting, with why.
func (c *cache) fillDRA(e *podEntry, pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.dra
	key := e.key()
	d.forgetPod(key)
	d.pods[key] = pod
	keys, wait := claimKeys(pod)
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName != nil { // read again when its claim is made
			d.use(pod.Namespace+"/"+*pc.ResourceClaimTemplateName, key)
		}
	}
	for _, k := range keys {
		d.use(k, key)
	}
	if wait != "" {
		e.bad = wait
		return
	}
	e.draClaims = keys
	ask := &draAsk{}
	var gpus int64
	var sig []any
	for _, k := range keys {
		claim := d.claim(k)
		if claim == nil {
			e.bad = fmt.Sprintf("waiting for ResourceClaim %s, which does not exist", k)
			return
		}
		if claim.DeletionTimestamp != nil {
			e.bad = fmt.Sprintf("ResourceClaim %s is being deleted", k)
			return
		}
		n, err := d.gpuCount(claim)
		if err != nil {
			e.bad = fmt.Sprintf("ResourceClaim %s: %v", claim.Name, err)
			return
		}
		if a := claim.Status.Allocation; a != nil {
			// Allocated: the pod goes where the devices are. Its GPUs are the pod's
			// first consumer's (the one it was allocated for, as it was bound), not
			// charged again for each pod sharing the claim.
			if a.NodeSelector != nil {
				ask.bound = append(ask.bound, nodeaffinity.NewLazyErrorNodeSelector(a.NodeSelector))
				sig = append(sig, a.NodeSelector)
			}
			if r := claim.Status.ReservedFor; len(r) > 0 && r[0].UID == pod.UID {
				gpus += d.allocatedGPUs(claim)
			}
			ask.text = appendText(ask.text, "allocated ResourceClaim "+claim.Name)
			continue
		}
		gpus += n
		spec := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace, UID: claim.UID}, Spec: claim.Spec}
		ask.pending = append(ask.pending, spec)
		sig = append(sig, claim.Spec)
		ask.text = appendText(ask.text, "ResourceClaim "+claim.Name+" ("+describeClaim(claim)+")")
	}
	raw, _ := json.Marshal(sig)
	sum := sha256.Sum256(raw)
	ask.key = hex.EncodeToString(sum[:12])
	if gpus > 0 {
		if e.request.GPUMilli > 0 || e.gpu.Kind != "" && e.gpu.Devices > 0 {
			e.bad = "the pod asks for GPUs both through " + string(corev1.ResourceName("nvidia.com/gpu")) + " or GPU-sharing annotations and through resource claims; ask one way"
			return
		}
		e.request.GPUMilli = gpus * 1000
		g, err := gpuRequest(gpus, nil)
		if err != nil {
			e.bad = err.Error()
			return
		}
		e.gpu = g
	}
	e.cons = withDRA(e.cons, ask)
}

func appendText(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// gpuCount is how many whole GPUs a claim asks for before it is allocated: the exact
// count of each request whose class is a GPU class; for a prioritized list, the fewest
// any of its alternatives asks (the allocator may take a larger one where it fits, and
// the allocation is then charged: allocatedGPUs). "All" devices of a GPU class is not a
// count the core can charge before the node is known, so it is refused.
func (d *draState) gpuCount(claim *resourceapi.ResourceClaim) (int64, error) {
	var n int64
	for _, r := range claim.Spec.Devices.Requests {
		if ex := r.Exactly; ex != nil {
			c, err := d.exactGPUs(r.Name, ex.DeviceClassName, ex.AllocationMode, ex.Count, ex.AdminAccess)
			if err != nil {
				return 0, err
			}
			n += c
			continue
		}
		least := int64(-1)
		for _, sub := range r.FirstAvailable {
			c, err := d.exactGPUs(r.Name+"/"+sub.Name, sub.DeviceClassName, sub.AllocationMode, sub.Count, nil)
			if err != nil {
				continue // an alternative of all devices: the others are counted
			}
			if least < 0 || c < least {
				least = c
			}
		}
		if least < 0 && len(r.FirstAvailable) > 0 {
			return 0, fmt.Errorf("request %q asks only for all devices of GPU classes; ask an exact count", r.Name)
		}
		n += max(least, 0)
	}
	return n, nil
}

// exactGPUs is the GPUs one request (or alternative) asks for: its count when its class
// is a GPU class, else none.
func (d *draState) exactGPUs(name, class string, mode resourceapi.DeviceAllocationMode, count int64, admin *bool) (int64, error) {
	if !d.gpuClasses[class] || admin != nil && *admin {
		return 0, nil
	}
	if mode == resourceapi.DeviceAllocationModeAll {
		return 0, fmt.Errorf("request %q asks for all devices of GPU class %s; ask an exact count", name, class)
	}
	return max(count, 1), nil
}

// allocatedGPUs is how many GPUs an allocated claim was given: its devices that a GPU
// class selects, whatever class the claim asked them through (a class of the site's
// that selects whole GPUs too is charged for them), as the pod's assignment names them.
func (d *draState) allocatedGPUs(claim *resourceapi.ResourceClaim) int64 {
	var n int64
	for _, res := range claim.Status.Allocation.Devices.Results {
		if res.AdminAccess != nil && *res.AdminAccess {
			continue
		}
		if dev := d.device(structured.MakeDeviceID(res.Driver, res.Pool, res.Device)); dev != nil && d.inGPUClass(res.Driver, dev) {
			n++
		}
	}
	return n
}

// describeClaim says what a claim asks, for why-pending.
func describeClaim(claim *resourceapi.ResourceClaim) string {
	var parts []string
	for _, r := range claim.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil && r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll:
			parts = append(parts, "all of "+r.Exactly.DeviceClassName)
		case r.Exactly != nil:
			parts = append(parts, fmt.Sprintf("%d of %s", max(r.Exactly.Count, 1), r.Exactly.DeviceClassName))
		case len(r.FirstAvailable) > 0:
			parts = append(parts, "one of "+fmt.Sprint(len(r.FirstAvailable))+" alternatives")
		}
	}
	return strings.Join(parts, ", ")
}

// forgetDRAPod drops what fillDRA noted of a pod that is gone or done.
func (c *cache) forgetDRAPod(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dra.forgetPod(key)
}

// use notes that pod (a key) names a claim or template.
func (d *draState) use(key, pod string) {
	if d.users[key] == nil {
		d.users[key] = map[string]bool{}
	}
	d.users[key][pod] = true
}

// forgetPod drops what fillDRA noted of a pod.
func (d *draState) forgetPod(pod string) {
	p := d.pods[pod]
	if p == nil {
		return
	}
	delete(d.pods, pod)
	for _, pc := range p.Spec.ResourceClaims {
		for _, name := range []*string{pc.ResourceClaimName, pc.ResourceClaimTemplateName} {
			if name != nil {
				d.unuse(p.Namespace+"/"+*name, pod)
			}
		}
	}
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			d.unuse(p.Namespace+"/"+*st.ResourceClaimName, pod)
		}
	}
}

func (d *draState) unuse(key, pod string) {
	if u := d.users[key]; u != nil {
		delete(u, pod)
		if len(u) == 0 {
			delete(d.users, key)
		}
	}
}

// withDRA adds a pod's claims to its node constraints.
func withDRA(cons *nodeConstraints, ask *draAsk) *nodeConstraints {
	out := *cons
	out.key = cons.key + "|dra:" + ask.key
	out.dra = ask
	out.text = appendText(cons.text, ask.text)
	return podsConstraints.share(out.key, &out)
}

// draAllows reports whether a node could meet a class's claims if all its devices were
// free: the core counts GPUs as they are taken and freed (and may free them by reclaim or
// preemption), so which devices are free is decided at the bind (dra_bind.go). A node
// that publishes GPUs through DRA takes no pod asking nvidia.com/gpu of a device plugin it
// does not run. Caller holds c.mu.
func (c *cache) draAllows(cl *nodeClass, e *nodeEntry) bool {
	ask := cl.cons.dra
	if ask == nil {
		return true
	}
	for _, sel := range ask.bound {
		if ok, err := sel.Match(e.kube); !ok || err != nil {
			return false
		}
	}
	if len(ask.pending) == 0 {
		return true
	}
	if cl.draAlloc == nil {
		a, err := structured.NewAllocator(context.Background(), draFeatures, structured.AllocatedState{}, classLister(c.dra.classes), c.dra.sliceList(), c.dra.celCache)
		if err != nil {
			return false
		}
		cl.draAlloc, cl.draDeadline = a, time.Now().Add(draClassBudget)
	}
	// A tenant's claims must not hold the cycle (which runs under c.mu) as long as they
	// like: the allocator's search is bounded, per class, as kube-scheduler bounds its
	// DRA filter; nodes not tried by then are not used this time round.
	ctx, cancel := context.WithDeadline(context.Background(), cl.draDeadline)
	defer cancel()
	res, err := cl.draAlloc.Allocate(ctx, e.kube, ask.pending)
	return err == nil && res != nil
}

// draClassBudget bounds the time spent finding where one set of claims could be met,
// over all nodes; draBindBudget one allocation at a bind.
const (
	draClassBudget = 2 * time.Second
	draBindBudget  = 10 * time.Second
)

// draPartition reports whether a partition's GPUs come through DRA. Caller holds c.mu.
func (c *cache) draPartition(name string) bool {
	for i := range c.parts {
		if c.parts[i].p.Name == name {
			return c.parts[i].draGPUs
		}
	}
	return false
}

// claimedGPUs makes a Slurm job of a DRA partition ask its GPUs as claims do: counted as
// GPUs, without the device plugin's nvidia.com/gpu its pods will not ask for (the pod
// factory moves it to a ResourceClaim).
func claimedGPUs(j *bridge.Job) {
	for k := range j.Groups {
		r := &j.Groups[k].Request
		if slices.ContainsFunc(r.Extended, isPluginGPU) {
			r.Extended = slices.DeleteFunc(slices.Clone(r.Extended), isPluginGPU)
		}
	}
}

func isPluginGPU(q bridge.Quantity) bool { return q.Name == v1alpha1.GPUResource }
