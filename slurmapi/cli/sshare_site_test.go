package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// siteQueues are the Queues of examples/site.yaml, the site `sluice dev` seeds.
func siteQueues(t *testing.T) []client.Object {
	t.Helper()
	data, err := os.ReadFile("../../examples/site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() != "Queue" {
			continue
		}
		q := &v1alpha1.Queue{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, q); err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
}

// siteLedgerServer serves the ledger with the server's own fair-share tree
// (kube.ShareTree) over the seeded site's Queues: research -> nlp (alice),
// vision (bob); default. Slurm jobs: alice 2 GPUs for 10 h in nlp, bob half a
// GPU for 4 h in vision. Kubernetes workloads: the nlp namespace's 1-GPU Job
// for 6 h in nlp, and the ml namespace's in default (which admits every
// namespace), charged to ns:nlp and ns:ml.
func siteLedgerServer(t *testing.T) {
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	queues := fake.NewClientBuilder().WithScheme(scheme).WithObjects(siteQueues(t)...).Build()
	job := func(id int64, user, account string, gpus float64, start time.Time, hours int) accounting.Job {
		tres := accounting.TRES{CPUs: 8, MemMB: 65536, GPUs: gpus, Nodes: 1}
		origin := accounting.OriginSlurm
		if accounting.IsManifestUser(user) {
			origin = accounting.OriginKubernetes
		}
		end := start.Add(time.Duration(hours) * time.Hour)
		return accounting.Job{JobID: id, ArrayTaskID: -1, Name: "j", User: user, Account: account, Partition: "h100", QOS: "normal",
			Origin: origin, Submit: start, Start: start, End: end, State: accounting.StateCompleted,
			Requested: tres, Allocated: tres, NodeList: "h100-0"}
	}
	serveLedger(t, "alice", []accounting.Job{
		job(1, "alice", "nlp", 2, novDay(28, 0), 10),
		job(2, "bob", "vision", 0.5, novDay(28, 0), 4),
		job(3, "ns:nlp", "nlp", 1, novDay(29, 0), 6),
		job(4, "ns:ml", "default", 1, novDay(29, 0), 2),
	}, kube.ShareTree(queues))
}

// TestSshareShowsTheSitesTree: `sshare -a` on the seeded site prints the whole
// tree as Slurm does: root, each account at its depth (research above nlp and
// vision, though it has no user of its own), users under their accounts. The
// namespaces' workloads count in their accounts' usage and are no user rows.
func TestSshareShowsTheSitesTree(t *testing.T) {
	siteLedgerServer(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"sshare-all.golden", []string{"-a"}},
		{"sshare-all-long.golden", []string{"-a", "-l"}},
	} {
		got, err := runCLI(t, sshare, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, tc.golden, got)
		if strings.Contains(got, "ns:") {
			t.Errorf("sshare %s shows a namespace as a user:\n%s", strings.Join(tc.args, " "), got)
		}
	}
}
