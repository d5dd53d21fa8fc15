package webhook

import (
	"strings"
	"testing"
)

// The policy names exactly the identities and schedulers it is given, and refuses a
// configuration it could not write safely into CEL.
func TestPolicyObjects(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		wantErr string
		want    []string // in the match condition or variables
	}{
		{"the server's identity is exempt", Policy{Users: []string{"system:serviceaccount:sluice-system:sluice"}, SchedulerNames: []string{"sluice", "kai-scheduler"}}, "",
			[]string{"!(request.userInfo.username in ['system:serviceaccount:sluice-system:sluice'])", "in ['sluice', 'kai-scheduler']"}},
		{"no identity would lock Sluice out", Policy{}, "Policy.Users is required", nil},
		{"a quote cannot break out of the CEL string", Policy{Users: []string{"x') || true || ('"}}, "cannot be named", nil},
		{"a bad scheduler name", Policy{Users: []string{"sluice"}, SchedulerNames: []string{"Not A Name"}}, "scheduler name", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, binding, err := tt.p.objects()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text := policy.Spec.MatchConditions[0].Expression
			for _, v := range policy.Spec.Variables {
				text += "\n" + v.Expression
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("policy does not say %q:\n%s", w, text)
				}
			}
			if binding.Spec.PolicyName != PolicyName || len(binding.Spec.ValidationActions) != 1 || binding.Spec.ValidationActions[0] != "Deny" {
				t.Errorf("binding %+v, want it to deny through %s", binding.Spec, PolicyName)
			}
		})
	}
}
