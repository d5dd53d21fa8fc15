package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// TestPodsGoWhereTheirVolumesAre: a pod whose claim is bound to a local volume goes to the
// volume's node, though binpack alone would pick another; a pod whose claim is missing or
// unbound waits with a reason that names the claim (and WaitForFirstConsumer when its
// class binds on first consumer) instead of being placed blindly.
func TestPodsGoWhereTheirVolumesAre(t *testing.T) {
	local := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"n-b1"}}}}}}
	cases := []struct {
		name   string
		claim  *claimEntry
		late   bool
		node   string // "": waits
		reason string
	}{
		{"bound local volume", &claimEntry{volume: "pv-local"}, false, "n-b1", ""},
		{"claim not found", nil, false, "", `persistentvolumeclaim "data" not found`},
		{"unbound, WaitForFirstConsumer", &claimEntry{class: "local-path"}, true, "", "WaitForFirstConsumer"},
		{"unbound, Immediate", &claimEntry{class: "standard"}, false, "", "not bound yet"},
		{"bound to a volume not seen", &claimEntry{volume: "pv-gone"}, false, "", `persistentvolume "pv-gone"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			for _, n := range placementNodes() {
				setTestNode(c, n)
			}
			c.setQueue("q", &bridge.Queue{Name: "q"})
			c.setVolume("pv-local", &volumeEntry{affinity: local})
			c.setStorageClass("local-path", true, false)
			c.setStorageClass("standard", false, false)
			if tc.claim != nil {
				c.setClaim("ns/data", tc.claim)
			}
			// a pod holding 4 GPUs on n-a1 makes it binpack's choice
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			busy := testPod("busy", "4", map[string]string{v1alpha1.PodGroupAnnotation: "busy"}, "n-a1")
			c.setPod("ns/busy", convertPod(busy, "sluice"))
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			pod := testPod("w", "1", nil, "")
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
			c.setPod("ns/w", convertPod(slimPod(pod, "sluice"), "sluice"))
			snap, blocked := c.snapshot(metav1.Now().Time)
			d := bridge.Schedule(snap)
			if tc.node == "" {
				if len(d.Binds) != 0 || len(blocked) != 1 || blocked[0].Code != ReasonWaitingForVolumes || !strings.Contains(blocked[0].Reason, tc.reason) {
					t.Fatalf("binds %+v blocked %+v, want it waiting with %s saying %q", d.Binds, blocked, ReasonWaitingForVolumes, tc.reason)
				}
				return
			}
			if len(d.Binds) != 1 || d.Binds[0].Node != tc.node {
				t.Fatalf("binds %+v (pending %+v, blocked %+v), want it on %s", d.Binds, d.Pending, blocked, tc.node)
			}
		})
	}
}
