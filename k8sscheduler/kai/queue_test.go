package kai

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// kaiQueue decodes a KAI Queue manifest as a dynamic client would read it.
func kaiQueue(t *testing.T, manifest string) *Queue {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	q, err := DecodeQueue(u)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func TestSluiceQueueTranslatesKAIUnits(t *testing.T) {
	q := kaiQueue(t, `
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: ml-team}
spec:
  parentQueue: research
  priority: 200
  resources:
    gpu: {quota: 2.5, limit: 4, overQuotaWeight: 3}
    cpu: {quota: 2000, limit: -1, overQuotaWeight: 1}
    memory: {quota: 4096, limit: 8192}
`)
	got, warnings, err := SluiceQueue(q)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("SluiceQueue: %v, warnings %v", err, warnings)
	}
	if got.Spec.ParentQueue != "research" || got.Spec.Priority != 200 || got.Labels[MirrorLabel] != "true" {
		t.Errorf("parent %q priority %d labels %v", got.Spec.ParentQueue, got.Spec.Priority, got.Labels)
	}
	if got.Spec.NamespaceSelector == nil || len(got.Spec.NamespaceSelector.MatchLabels)+len(got.Spec.NamespaceSelector.MatchExpressions) != 0 {
		t.Errorf("namespaceSelector %v, want {} (a KAI Queue serves every namespace)", got.Spec.NamespaceSelector)
	}
	if len(got.Spec.Quotas) != 1 || got.Spec.Quotas[0].Partition != v1alpha1.AllPartitions {
		t.Fatalf("quotas %+v, want one for every partition", got.Spec.Quotas)
	}
	p := got.Spec.Quotas[0]
	for _, c := range []struct {
		name string
		got  *resource.Quantity
		want string
	}{
		{"gpu quota", p.GPU.Quota, "2500m"}, {"gpu limit", p.GPU.Limit, "4"},
		{"cpu quota (millicores)", p.CPU.Quota, "2"},
		{"memory quota (MB)", p.Memory.Quota, "4096M"}, {"memory limit (MB)", p.Memory.Limit, "8192M"},
	} {
		if c.got == nil || c.got.Cmp(resource.MustParse(c.want)) != 0 {
			t.Errorf("%s = %v, want %s", c.name, c.got, c.want)
		}
	}
	if p.CPU.Limit != nil {
		t.Errorf("cpu limit -1 became %v, want none", p.CPU.Limit)
	}
	if *p.GPU.OverQuotaWeight != 3 || *p.CPU.OverQuotaWeight != 1 || *p.Memory.OverQuotaWeight != 1 {
		t.Errorf("weights gpu %v cpu %v memory %v", *p.GPU.OverQuotaWeight, *p.CPU.OverQuotaWeight, p.Memory.OverQuotaWeight)
	}
}

func TestSluiceQueueDefaultsAndBounds(t *testing.T) {
	// An unset priority is KAI's 100; a limit left unset caps at the quota; unlimited
	// bounds are absent bounds, with a warning where Sluice cannot say the same.
	got, warnings, err := SluiceQueue(kaiQueue(t, `
metadata: {name: team}
spec:
  resources:
    gpu: {quota: 1}
    cpu: {quota: -1, limit: -1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority != DefaultQueuePriority {
		t.Errorf("priority %d, want KAI's default %d", got.Spec.Priority, DefaultQueuePriority)
	}
	p := got.Spec.Quotas[0]
	if p.GPU.Limit == nil || p.GPU.Limit.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("gpu limit %v, want the quota 1 (KAI: nothing beyond the quota without a limit)", p.GPU.Limit)
	}
	if p.CPU != nil {
		t.Errorf("cpu %+v, want none (unlimited both ways)", p.CPU)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "quota -1") {
		t.Errorf("warnings %q, want one for the unlimited cpu quota", warnings)
	}
}

func TestSluiceQueueRefusals(t *testing.T) {
	for _, c := range []struct{ name, manifest, want string }{
		{"dotted name", `{metadata: {name: a.b}}`, "DNS label"},
		{"negative priority", `{metadata: {name: a}, spec: {priority: -5}}`, "priority"},
		{"quota below -1", `{metadata: {name: a}, spec: {resources: {gpu: {quota: -2}}}}`, "quota -2"},
		{"negative weight", `{metadata: {name: a}, spec: {resources: {gpu: {overQuotaWeight: -1}}}}`, "overQuotaWeight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := SluiceQueue(kaiQueue(t, c.manifest))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want one naming %q", err, c.want)
			}
		})
	}
}

func TestPlanQueuesLeavesAdminQueuesAndRoundTrips(t *testing.T) {
	kai := []*Queue{
		kaiQueue(t, `{metadata: {name: research}, spec: {resources: {gpu: {quota: 4, limit: -1}}}}`),
		kaiQueue(t, `{metadata: {name: nlp}, spec: {parentQueue: research, resources: {gpu: {quota: 2, limit: -1, overQuotaWeight: 2}}}}`),
		kaiQueue(t, `{metadata: {name: ops}, spec: {}}`),
	}
	admin := v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}
	stale := v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "gone", Labels: map[string]string{MirrorLabel: "true"}}}
	plan := PlanQueues(kai, []v1alpha1.Queue{admin, stale}, true)
	want := map[string]Action{"research": Create, "nlp": Create, "ops": Skip, "gone": Delete}
	for _, c := range plan {
		if want[c.Name] != c.Action {
			t.Errorf("%s: %s, want %s (%s)", c.Name, c.Action, want[c.Name], c.Reason)
		}
	}
	// What was created plans as unchanged: the translation round-trips, "4" and "4000m"
	// alike; a changed KAI quota plans an update.
	var made []v1alpha1.Queue
	for _, c := range plan {
		if c.Action == Create {
			q := *c.Want.DeepCopy()
			q.Spec.Quotas[0].GPU.Quota = qty(resource.NewMilliQuantity(c.Want.Spec.Quotas[0].GPU.Quota.MilliValue(), resource.DecimalSI).String())
			made = append(made, q)
		}
	}
	for _, c := range PlanQueues(kai[:2], made, false) {
		if c.Action != Unchanged {
			t.Errorf("second plan: %s %s, want unchanged", c.Name, c.Action)
		}
	}
	kai[1].Spec.Resources.GPU.Quota = new(3.0)
	if c := PlanQueues(kai[:2], made, false)[0]; c.Name != "nlp" || c.Action != Update {
		t.Errorf("after a quota change: %s %s, want nlp update", c.Name, c.Action)
	}
}
