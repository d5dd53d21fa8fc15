package crds

import (
	"testing"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The embedded manifests must describe exactly the kinds the Go package
// registers, each with a served, stored v1alpha1 version, or Install would
// leave clients unable to use a type.
func TestDefinitionsMatchRegisteredKinds(t *testing.T) {
	defs, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // kind -> scope
		"Partition":   "Cluster",
		"PodGroup":    "Namespaced",
		"QOS":         "Cluster",
		"Queue":       "Cluster",
		"Reservation": "Cluster",
	}
	if len(defs) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(defs), len(want))
	}
	for _, d := range defs {
		kind := d.Spec.Names.Kind
		scope, ok := want[kind]
		if !ok {
			t.Errorf("unexpected kind %q", kind)
			continue
		}
		if string(d.Spec.Scope) != scope {
			t.Errorf("%s: scope %s, want %s", kind, d.Spec.Scope, scope)
		}
		if d.Spec.Group != v1alpha1.GroupVersion.Group {
			t.Errorf("%s: group %s", kind, d.Spec.Group)
		}
		if len(d.Spec.Versions) != 1 || d.Spec.Versions[0].Name != v1alpha1.GroupVersion.Version ||
			!d.Spec.Versions[0].Served || !d.Spec.Versions[0].Storage {
			t.Errorf("%s: versions %+v, want one served, stored %s", kind, d.Spec.Versions, v1alpha1.GroupVersion.Version)
		}
		if len(d.Spec.Versions[0].AdditionalPrinterColumns) < 3 {
			t.Errorf("%s: only %d printer columns", kind, len(d.Spec.Versions[0].AdditionalPrinterColumns))
		}
	}
}
