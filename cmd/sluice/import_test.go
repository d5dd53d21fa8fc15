package main

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

func kaiQueueFrom(t *testing.T, manifest string) *kai.Queue {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	q, err := kai.DecodeQueue(u)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// The dry run says what would be written, queue by queue, and that nothing was; a KAI
// Queue Sluice cannot take is named with why.
func TestPrintQueuePlanDryRun(t *testing.T) {
	plan := kai.PlanQueues([]*kai.Queue{
		kaiQueueFrom(t, `{metadata: {name: research}, spec: {resources: {gpu: {quota: 4, limit: -1, overQuotaWeight: 2}}}}`),
		kaiQueueFrom(t, `{metadata: {name: nlp}, spec: {parentQueue: research, priority: 150, resources: {gpu: {quota: 0.5, limit: 2}}}}`),
		kaiQueueFrom(t, `{metadata: {name: Bad.Name}}`),
	}, []v1alpha1.Queue{}, false)
	var out bytes.Buffer
	failed := printQueuePlan(&out, plan, true)
	text := out.String()
	for _, want := range []string{
		"would create     nlp parent=research priority=150 gpu=500m/2/1",
		"would create     research priority=100 gpu=4/-/2",
		`cannot import    Bad.Name: KAI Queue "Bad.Name"`,
		"2 create, 1 skip, dry run: nothing written",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if failed != 1 {
		t.Errorf("failed = %d, want 1", failed)
	}
}
