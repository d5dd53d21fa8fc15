package scheduler

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ReasonWaitingForVolumes keeps a pod pending whose PersistentVolumeClaim is missing or not
// bound: Sluice places a pod only next to its bound volumes (their node affinity, as
// kube-scheduler's VolumeBinding filter), and does not bind or provision volumes itself.
const ReasonWaitingForVolumes = "WaitingForVolumes"

// claimEntry is what placement reads of a PersistentVolumeClaim.
type claimEntry struct {
	volume string // spec.volumeName; "" while unbound
	class  string // storage class name
}

// volumeEntry is what placement reads of a PersistentVolume: its required node affinity
// (nil: any node).
type volumeEntry struct{ affinity *corev1.NodeSelector }

// podClaims are the claims a pod mounts: its persistentVolumeClaim volumes and the claims
// its generic ephemeral volumes get (named <pod>-<volume>).
func podClaims(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, pod.Name+"-"+v.Name)
		}
	}
	return out
}

// claimVolumes keeps of a pod's volumes only the claims it mounts, for the slim cache.
func claimVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName}}})
		case v.Ephemeral != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
		}
	}
	return out
}

// volumesWait says why a gang's pending pods cannot be placed yet for their claims, ""
// when every claim is bound to a volume the cache knows. A gang already running keeps
// running; only what it still has to place waits.
func (c *cache) volumesWait(g *groupEntry) string {
	ns, _, _ := strings.Cut(g.key, "/")
	for _, claims := range g.claims {
		for _, name := range claims {
			ce, ok := c.claims[ns+"/"+name]
			switch {
			case !ok:
				return fmt.Sprintf("persistentvolumeclaim %q not found", name)
			case ce.volume == "" && c.lateBinding[ce.class]:
				return fmt.Sprintf("persistentvolumeclaim %q is not bound: its StorageClass %s binds a volume when a pod is scheduled (WaitForFirstConsumer), which Sluice does not do; bind the claim first (a PersistentVolume with a claimRef) or use a StorageClass with Immediate binding", name, ce.class)
			case ce.volume == "":
				return fmt.Sprintf("persistentvolumeclaim %q is not bound yet", name)
			}
			if _, ok := c.volumes[ce.volume]; !ok {
				return fmt.Sprintf("persistentvolume %q of claim %q not found", ce.volume, name)
			}
		}
	}
	return ""
}

// withVolumes adds the node affinity of a group's bound volumes to its node constraints.
func (c *cache) withVolumes(cons *nodeConstraints, ns string, claims []string) *nodeConstraints {
	var sels []*corev1.NodeSelector
	var names []string
	for _, name := range claims {
		ce := c.claims[ns+"/"+name]
		if v := c.volumes[ce.volume]; v != nil && v.affinity != nil {
			sels = append(sels, v.affinity)
			names = append(names, ce.volume)
		}
	}
	if len(sels) == 0 {
		return cons
	}
	out := *cons
	out.volumes = sels
	out.key = cons.key + "|pv:" + strings.Join(names, ",")
	out.text = cons.text + "; node affinity of persistentvolume " + strings.Join(names, ", ")
	return &out
}

// volumesAllow reports whether a node satisfies the node affinity of every volume.
func volumesAllow(sels []*nodeaffinity.LazyErrorNodeSelector, n *corev1.Node) bool {
	for _, s := range sels {
		if ok, err := s.Match(n); !ok || err != nil {
			return false
		}
	}
	return true
}

func (c *cache) setClaim(key string, ce *claimEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.claims[key]; ok && ce != nil && old == *ce {
		return
	}
	if ce == nil {
		delete(c.claims, key)
	} else {
		c.claims[key] = *ce
	}
	c.poke()
}

func (c *cache) setVolume(name string, v *volumeEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v == nil {
		delete(c.volumes, name)
	} else {
		c.volumes[name] = v
	}
	c.poke()
}

func (c *cache) setStorageClass(name string, late bool, gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gone {
		delete(c.lateBinding, name)
	} else {
		c.lateBinding[name] = late
	}
	c.poke()
}

func (s *Scheduler) claimHandlers() toolscache.ResourceEventHandler {
	return handler(func(pvc *corev1.PersistentVolumeClaim) {
		ce := claimEntry{volume: pvc.Spec.VolumeName}
		if pvc.Spec.StorageClassName != nil {
			ce.class = *pvc.Spec.StorageClassName
		}
		s.cache.setClaim(pvc.Namespace+"/"+pvc.Name, &ce)
	}, func(pvc *corev1.PersistentVolumeClaim) { s.cache.setClaim(pvc.Namespace+"/"+pvc.Name, nil) })
}

func (s *Scheduler) volumeHandlers() toolscache.ResourceEventHandler {
	return handler(func(pv *corev1.PersistentVolume) {
		v := &volumeEntry{}
		if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
			v.affinity = a.Required
		}
		s.cache.setVolume(pv.Name, v)
	}, func(pv *corev1.PersistentVolume) { s.cache.setVolume(pv.Name, nil) })
}

func (s *Scheduler) storageClassHandlers() toolscache.ResourceEventHandler {
	late := func(sc *storagev1.StorageClass) bool {
		return sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	}
	return handler(func(sc *storagev1.StorageClass) { s.cache.setStorageClass(sc.Name, late(sc), false) },
		func(sc *storagev1.StorageClass) { s.cache.setStorageClass(sc.Name, false, true) })
}
