package kube

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// DefaultClusterDomain is the cluster DNS domain a factory not told another assumes
// (the kubelet's clusterDomain default).
const DefaultClusterDomain = "cluster.local"

// jobHosts are the names a job's nodes have inside the job: SLURM_JOB_NODELIST,
// SLURMD_NODENAME, `hostname`, what srun -w takes and what the pods resolve each other
// by. They are the Kubernetes node names squeue, scontrol and sacct show, in the order
// Slurm numbers nodes (the node list expanded: `scontrol show hostnames | head -n1` is
// SLURM_NODEID 0, the batch host, as torchrun and Lightning recipes assume). rank[i] is
// the node index of binds[i].
//
// A pod's hostname must be a DNS label: a node named as a DNS subdomain
// (ip-10-0-1-5.ec2.internal) is known inside the job by its first label, as `hostname -s`
// gives it on a Slurm node, unless two of the job's nodes share it. Where no such name
// works the job's pod names stand in, as they did before node names were used.
func jobHosts(pg *v1alpha1.PodGroup, binds []bridge.Bind) (hosts []string, rank []int) {
	nodes := make([]string, len(binds))
	for i, b := range binds {
		nodes[i] = b.Node
	}
	order := slurmOrder(nodes)
	short := make([]string, len(order))
	seen := map[string]bool{}
	for i, n := range order {
		short[i] = hostLabel(n)
		if short[i] == "" || seen[short[i]] {
			return podHosts(pg, len(binds))
		}
		seen[short[i]] = true
	}
	rank = make([]int, len(binds))
	for i, n := range nodes {
		rank[i] = slices.Index(order, n)
	}
	return short, rank
}

// podHosts is the fallback naming: pod names, node index as bind order.
func podHosts(pg *v1alpha1.PodGroup, n int) (hosts []string, rank []int) {
	hosts, rank = make([]string, n), make([]int, n)
	for i := range n {
		hosts[i], rank[i] = PodName(pg, i), i
	}
	return hosts, rank
}

// slurmOrder sorts node names as a Slurm node list expands (h100-2 before h100-10); a
// list the expansion does not reproduce (a duplicate name) sorts as strings.
func slurmOrder(nodes []string) []string {
	order, err := sbatch.ParseNodeList(sbatch.HostList(nodes))
	if err != nil || len(order) != len(nodes) {
		order = slices.Clone(nodes)
		slices.Sort(order)
		return order
	}
	for _, n := range nodes {
		if !slices.Contains(order, n) {
			order = slices.Clone(nodes)
			slices.Sort(order)
			break
		}
	}
	return order
}

// hostLabel is the name node has as a pod hostname: itself when it is a DNS label, else
// its first label; "" when neither is one.
func hostLabel(node string) string {
	if len(validation.IsDNS1123Label(node)) == 0 {
		return node
	}
	first, _, _ := strings.Cut(node, ".")
	if len(validation.IsDNS1123Label(first)) == 0 {
		return first
	}
	return ""
}

// JobServiceName is the headless Service through which the pods of a job that serves
// launches resolve each other: HOST.<JobServiceName>, and HOST alone through the pods'
// DNS search path. One per job, not per namespace, because the names are node names:
// two jobs of one namespace on one node have pods of the same hostname.
func JobServiceName(pg *v1alpha1.PodGroup) string { return pg.Name }

// jobDNS is the DNS of a pod of a job that serves launches: the job's Service as its
// subdomain, and that subdomain on the search path, so `ping h100-1`, torchrun's
// MASTER_ADDR and srun's peers resolve the job's other nodes by the names the job sees.
func jobDNS(pg *v1alpha1.PodGroup, run RunAs) (subdomain string, cfg *corev1.PodDNSConfig) {
	svc := JobServiceName(pg)
	domain := run.ClusterDomain
	if domain == "" {
		domain = DefaultClusterDomain
	}
	return svc, &corev1.PodDNSConfig{Searches: []string{svc + "." + pg.Namespace + ".svc." + domain}}
}

// jobService is the headless Service of a job that serves launches. It publishes pods
// before they are ready (launchers look their peers up as they start), selects the
// job's pods only, and goes with the job's PodGroup.
func jobService(pg *v1alpha1.PodGroup) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: jobObjectMeta(JobServiceName(pg), pg),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: map[string]string{SlurmPodLabel: "true", v1alpha1.JobIDLabel: pg.Labels[v1alpha1.JobIDLabel]},
		},
	}
}
