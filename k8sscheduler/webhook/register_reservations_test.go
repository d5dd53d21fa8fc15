package webhook

import (
	"strings"
	"testing"
)

// With Reservations, the configuration also sends Reservation creations and spec
// changes, and PodGroups that others create naming a reservation, to the same server,
// failing closed.
func TestReservationsRegistration(t *testing.T) {
	reg := Registration{URL: "https://127.0.0.1:9443/mutate-pods", CABundle: []byte("ca"), Users: []string{"sluice-server"}, Reservations: true}
	cfg, err := reg.configuration()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Webhooks) != 3 || cfg.Webhooks[1].Name != ReservationsWebhookName || cfg.Webhooks[2].Name != PodGroupsWebhookName {
		t.Fatalf("%d webhooks, want %s, %s and %s", len(cfg.Webhooks), WebhookName, ReservationsWebhookName, PodGroupsWebhookName)
	}
	for _, tt := range []struct {
		i          int
		resource   string
		ops, scope string
		conditions []string
	}{
		{1, "reservations", "CREATE,UPDATE", "Cluster", []string{"object.spec != oldObject.spec"}},
		{2, "podgroups", "CREATE", "Namespaced", []string{"'sluice.dev/reservation' in object.metadata.?labels", "!(request.userInfo.username in ['sluice-server'])"}},
	} {
		wh := cfg.Webhooks[tt.i]
		rule := wh.Rules[0]
		var ops []string
		for _, o := range rule.Operations {
			ops = append(ops, string(o))
		}
		if rule.Resources[0] != tt.resource || rule.APIGroups[0] != "scheduling.sluice.dev" || strings.Join(ops, ",") != tt.ops || string(*rule.Scope) != tt.scope {
			t.Errorf("%s: rule %+v", wh.Name, rule)
		}
		if *wh.ClientConfig.URL != reg.URL || *wh.FailurePolicy != "Fail" {
			t.Errorf("%s: client %+v failure policy %s", wh.Name, wh.ClientConfig, *wh.FailurePolicy)
		}
		var exprs []string
		for _, c := range wh.MatchConditions {
			exprs = append(exprs, c.Expression)
		}
		for _, want := range tt.conditions {
			if !strings.Contains(strings.Join(exprs, "\n"), want) {
				t.Errorf("%s: match conditions %q do not say %q", wh.Name, exprs, want)
			}
		}
	}
}
