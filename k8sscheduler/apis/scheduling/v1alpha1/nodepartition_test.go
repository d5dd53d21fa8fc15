package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node is in one partition: the first by name whose selector takes it, else its label.
func TestNodePartition(t *testing.T) {
	part := func(name string, sel map[string]string) *Partition {
		return &Partition{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: PartitionSpec{NodeSelector: sel}}
	}
	parts := map[string]*Partition{
		"zeta":  part("zeta", map[string]string{"gpu": "h100"}),
		"alpha": part("alpha", map[string]string{"gpu": "h100", "rack": "3"}),
		"empty": part("empty", nil),
	}
	for _, c := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"gpu": "h100", "rack": "3"}, "alpha"}, // both select it: the first by name
		{map[string]string{"gpu": "h100"}, "zeta"},
		{map[string]string{"gpu": "a100", PartitionLabel: "empty"}, "empty"}, // an empty selector takes none; the label does
		{map[string]string{"gpu": "h100", PartitionLabel: "other"}, "zeta"},  // a selector wins over the label
		{map[string]string{}, ""},
	} {
		if got := NodePartition(c.labels, parts); got != c.want {
			t.Errorf("NodePartition(%v) = %q, want %q", c.labels, got, c.want)
		}
	}
}
