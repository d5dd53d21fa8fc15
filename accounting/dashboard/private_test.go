package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/accounting/report"
)

// With usage private (siteAuth), every usage figure the dashboard and the CLI's
// sshare and sreport read adds up only what the caller may see: a user their own,
// vic (coordinator of vision) vision's, ops (operator) everyone's; cluster-wide
// figures stay whole, as Slurm keeps cluster usage public. Percentages stay of the
// whole cluster (34 GPU-hours in november).
func TestUsageFollowsPrivateData(t *testing.T) {
	srv, _ := serve(t)
	const h = 3600.0
	tests := []struct {
		user       string
		fairShare  []string // account/user rows
		topUsers   []string // user=GPU-hours
		gpuHours   []string // account=GPU-hours
		byUser     []string // sreport cluster AccountUtilizationByUser: account/user=used hours
		sizes      []string // sreport job SizesByAccount: account=hours
		clusterGPU float64  // sreport cluster Utilization: allocated hours
	}{
		{"alice", []string{"nlp/alice"}, []string{"alice=20"}, []string{"nlp=20"}, []string{"nlp/alice=20"}, []string{"nlp=20"}, 34},
		{"bob", []string{"vision/bob"}, []string{"bob=2"}, []string{"vision=2"}, []string{"vision/bob=2"}, []string{"vision=2"}, 34},
		{"dave", []string{"vision/dave"}, []string{}, []string{}, []string{}, []string{}, 34},
		{"vic", []string{"vision", "vision/bob", "vision/dave"}, []string{"bob=2"}, []string{"vision=2"},
			[]string{"vision=2", "vision/bob=2"}, []string{"vision=2"}, 34},
		{"ops", []string{"root", "research", "nlp", "nlp/alice", "nlp/carol", "vision", "vision/bob", "vision/dave"},
			[]string{"alice=20", "carol=12", "bob=2"}, []string{"nlp=32", "vision=2"},
			[]string{"root=34", "research=34", "nlp=32", "nlp/alice=20", "nlp/carol=12", "vision=2", "vision/bob=2"}, []string{"nlp=32", "vision=2"}, 34},
	}
	for _, tt := range tests {
		as := map[string]string{"Authorization": "Bearer " + tokenOf(t, tt.user)}
		var f FairShare
		getWith(t, srv, "/ui/api/fairshare", as, &f)
		got := []string{}
		for _, r := range f.Rows {
			got = append(got, r.Account+slash(r.User))
		}
		check(t, tt.user, "fairshare", got, tt.fairShare)

		var top TopUsers
		getWith(t, srv, "/ui/api/top-users?"+novWindow, as, &top)
		got = []string{}
		for _, r := range top.Rows {
			got = append(got, fmt.Sprintf("%s=%g", r.User, r.GPUHours))
		}
		check(t, tt.user, "top-users", got, tt.topUsers)

		var g GPUHours
		getWith(t, srv, "/ui/api/gpu-hours?"+novWindow, as, &g)
		got = []string{}
		for _, s := range g.Series {
			got = append(got, fmt.Sprintf("%s=%g", s.Account, s.Total))
		}
		check(t, tt.user, "gpu-hours", got, tt.gpuHours)

		var byUser []report.AssocUsage
		sreportValue(t, srv, as, "cluster AccountUtilizationByUser", &byUser)
		got = []string{}
		for _, r := range byUser {
			got = append(got, fmt.Sprintf("%s%s=%g", r.Account, slash(r.User), r.Used/h))
			if r.Total != 34*h {
				t.Errorf("%s: %s/%s is a percentage of %g GPU-hours, want the cluster's 34", tt.user, r.Account, r.User, r.Total/h)
			}
		}
		check(t, tt.user, "AccountUtilizationByUser", got, tt.byUser)

		var sz report.Sizes
		sreportValue(t, srv, as, "job SizesByAccount", &sz)
		got = []string{}
		for _, r := range sz.Rows {
			sum := 0.0
			for _, b := range r.Bins {
				sum += b
			}
			got = append(got, fmt.Sprintf("%s=%g", r.Account, sum/h))
			if r.Total != 34*h {
				t.Errorf("%s: SizesByAccount %s is a percentage of %g GPU-hours, want the cluster's 34", tt.user, r.Account, r.Total/h)
			}
		}
		check(t, tt.user, "SizesByAccount", got, tt.sizes)

		var util []report.UtilizationRow
		sreportValue(t, srv, as, "cluster Utilization", &util)
		if len(util) != 1 || util[0].Allocated != tt.clusterGPU*h {
			t.Errorf("%s: cluster Utilization %+v, want %g GPU-hours allocated", tt.user, util, tt.clusterGPU)
		}
	}
}

func slash(user string) string {
	if user == "" {
		return ""
	}
	return "/" + user
}

func check(t *testing.T, user, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s sees %s %q, want %q", user, what, got, want)
	}
}

// sreportValue runs one GPU report over november as the caller and decodes its rows.
func sreportValue(t *testing.T, srv *httptest.Server, headers map[string]string, name string, into any) {
	t.Helper()
	var got struct {
		Value json.RawMessage `json:"value"`
	}
	if code := getWith(t, srv, "/ui/api/sreport?report="+url.QueryEscape(name)+"&tres=gres/gpu&"+novWindow, headers, &got); code != 200 {
		t.Fatalf("%s: status %d", name, code)
	}
	if err := json.Unmarshal(got.Value, into); err != nil {
		t.Fatalf("%s: %v in %s", name, err, got.Value)
	}
}
