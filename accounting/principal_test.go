package accounting

import (
	"testing"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestManifestUserPrefixIsTheAPIs(t *testing.T) {
	if ManifestUserPrefix != v1alpha1.ManifestUserPrefix {
		t.Fatalf("accounting.ManifestUserPrefix %q, v1alpha1.ManifestUserPrefix %q: sshare would show namespaces as users", ManifestUserPrefix, v1alpha1.ManifestUserPrefix)
	}
	for user, want := range map[string]bool{v1alpha1.ManifestUser("nlp"): true, "alice": false, "nsalice": false} {
		if IsManifestUser(user) != want {
			t.Errorf("IsManifestUser(%q) = %v, want %v", user, !want, want)
		}
	}
}
