package kube

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/bridge"
)

// TestBuildPodsRunAsTheIdentity: a job's pods carry its user's groups as
// supplementalGroups and its user's HOME, USER and LOGNAME, whatever the
// submitting shell exported (its HOME is the login host's); without a home
// from the site HOME is "/", never the submitter's.
func TestBuildPodsRunAsTheIdentity(t *testing.T) {
	// What sbatch exports from a root shell on a laptop.
	exported := map[string]any{"environment": []string{"HOME=/root", "USER=root", "LOGNAME=root", "LR=0.1"}}
	tests := []struct {
		name       string
		ids        *UserIDs
		wantGroups []int64
		wantHome   string
	}{
		{"passwd identity", &UserIDs{UID: 1001, GID: 100, Groups: []int64{100, 2000}, Home: "/home/alice"}, []int64{100, 2000}, "/home/alice"},
		// Without a home from the site, HOME stays what sbatch exported, as under
		// Slurm (the factory then moves it, with the job's other variables, to the
		// job's environment Secret).
		{"no home known", &UserIDs{UID: 1001, GID: 100, Groups: []int64{100}}, []int64{100}, "/root"},
		{"unmapped, run as nobody", nil, nil, "/root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := submitted(t, "#SBATCH -J a\n", exported)
			pods, err := BuildPods(pg, []bridge.Bind{{Node: "h100-0", Group: memberName}},
				RunAs{Image: "img", LauncherImage: testLauncherImage, IDs: tc.ids, StrictGroups: true})
			if err != nil {
				t.Fatal(err)
			}
			sc := pods[0].Spec.SecurityContext
			if !reflect.DeepEqual(sc.SupplementalGroups, tc.wantGroups) {
				t.Errorf("supplementalGroups %v, want %v", sc.SupplementalGroups, tc.wantGroups)
			}
			if sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != "Strict" {
				t.Errorf("supplementalGroupsPolicy %v, want Strict where the nodes support it", sc.SupplementalGroupsPolicy)
			}
			env := map[string][]string{}
			for _, e := range pods[0].Spec.Containers[0].Env {
				env[e.Name] = append(env[e.Name], e.Value)
			}
			for name, want := range map[string]string{"HOME": tc.wantHome, "USER": "alice", "LOGNAME": "alice"} {
				if got := env[name]; len(got) != 1 || got[0] != want {
					t.Errorf("%s %q, want only %q", name, got, want)
				}
			}
		})
	}
}
