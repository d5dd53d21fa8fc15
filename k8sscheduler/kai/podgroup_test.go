package kai

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func kaiPodGroup(t *testing.T, manifest string) *PodGroup {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	pg, err := DecodePodGroup(u)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

func TestSluicePodGroupKeepsTheGang(t *testing.T) {
	got, err := SluicePodGroup(kaiPodGroup(t, `
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: train, namespace: team-a, uid: abc}
spec:
  minMember: 3
  queue: nlp
  priorityClassName: train
  preemptibility: non-preemptible
  topologyConstraint: {topology: cluster, requiredTopologyLevel: sluice.dev/rack, preferredTopologyLevel: sluice.dev/block}
  subGroups: [{name: workers, minMember: 2}]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if got.Name != "train" || got.Namespace != "team-a" || s.MinMember != 3 || s.Queue != "nlp" ||
		s.PriorityClassName != "train" || s.Preemptibility != v1alpha1.NonPreemptible {
		t.Errorf("got %s/%s %+v", got.Namespace, got.Name, s)
	}
	if got.Annotations[v1alpha1.TopologyRequiredAnnotation] != "sluice.dev/rack" || got.Annotations[v1alpha1.TopologyPreferredAnnotation] != "sluice.dev/block" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "abc" || got.OwnerReferences[0].APIVersion != "scheduling.run.ai/v2alpha2" {
		t.Errorf("owners %+v, want the KAI PodGroup", got.OwnerReferences)
	}
}

func TestSluicePodGroupDefaultsAndRefusals(t *testing.T) {
	got, err := SluicePodGroup(kaiPodGroup(t, `{metadata: {name: a, namespace: ns}, spec: {}}`))
	if err != nil || got.Spec.Queue != v1alpha1.DefaultQueue || got.Spec.MinMember != 1 || got.Annotations != nil {
		t.Errorf("empty spec: %v %+v %v", err, got.Spec, got.Annotations)
	}
	for manifest, want := range map[string]string{
		`{metadata: {name: a}, spec: {queue: Team_A}}`:         "queue",
		`{metadata: {name: a}, spec: {preemptibility: maybe}}`: "preemptibility",
	} {
		if _, err := SluicePodGroup(kaiPodGroup(t, manifest)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one naming %s", manifest, err, want)
		}
	}
}

func TestCRDsDeclareWhatIsRead(t *testing.T) {
	defs, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	for _, d := range defs {
		served[d.Name] = d.Spec.Versions[0].Name
		spec := d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if spec.XPreserveUnknownFields == nil || !*spec.XPreserveUnknownFields {
			t.Errorf("%s: spec must keep fields Sluice does not read, so KAI manifests apply unchanged", d.Name)
		}
	}
	if served["queues.scheduling.run.ai"] != QueuesGVR.Version || served["podgroups.scheduling.run.ai"] != PodGroupsGVR.Version {
		t.Errorf("served versions %v, want Queue %s and PodGroup %s", served, QueuesGVR.Version, PodGroupsGVR.Version)
	}
}
