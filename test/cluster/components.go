package cluster

import (
	_ "embed"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kwokStages is the kwok --config the rig runs with: its node and pod stages.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// Network ranges of the simulated cluster. Pod IPs come from kwok; 10.244/16
// leaves room for the scale benchmarks' thousands of pods.
const (
	serviceCIDR       = "10.96.0.0/16"
	kubernetesService = "10.96.0.1" // first address of serviceCIDR
	podCIDR           = "10.244.0.0/16"
)

// layout is where a rig keeps its state under Options.Dir, and which ports it
// was given.
type layout struct {
	dir        string
	etcdClient int
	etcdPeer   int
	apiServer  int
	kcm        int
	scheduler  int
	kwok       int // kwok's kubelet server: container logs of the simulated nodes
}

func (l layout) path(parts ...string) string {
	return filepath.Join(append([]string{l.dir}, parts...)...)
}

func (l layout) etcdURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(l.etcdClient)
}

func (l layout) apiServerURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(l.apiServer)
}

func (l layout) kubeconfig(name string) string {
	if name == "admin" {
		return l.path("kubeconfig")
	}
	return l.path("kubeconfigs", name+".kubeconfig")
}

// ownedPaths are the entries under Dir a rig creates; a new start removes them
// (a fresh CA invalidates everything in the old etcd) and nothing else, so the
// state dir can be shared with other tools, such as `sluice dev`'s ledger.
func (l layout) ownedPaths() []string {
	return []string{l.path("etcd"), l.path("pki"), l.path("logs"), l.path("kubeconfigs"), l.path("kwok"), l.path("kubeconfig"),
		l.path("nodes"), l.path("images"), l.path("coredns")}
}

func (l layout) etcdArgs() []string {
	peer := "http://127.0.0.1:" + strconv.Itoa(l.etcdPeer)
	return []string{
		"--name=rig",
		"--data-dir=" + l.path("etcd"),
		"--listen-client-urls=" + l.etcdURL(),
		"--advertise-client-urls=" + l.etcdURL(),
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=rig=" + peer,
		"--initial-cluster-state=new",
		// The rig's data is thrown away on every start; durability only costs
		// time on a busy test machine.
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=" + strconv.Itoa(4<<30),
		"--log-level=warn",
	}
}

func (l layout) apiServerArgs(f pkiFiles, defaultLimits, realNodes bool) []string {
	issuer := url.URL{Scheme: "https", Host: "kubernetes.default.svc.cluster.local"}
	bind := "127.0.0.1"
	if realNodes {
		// Pods on real nodes reach the API server at their node's address (the
		// kubernetes Service's 10.96.0.1 is forwarded there: realnodes.go).
		bind = "0.0.0.0"
	}
	args := []string{
		"--etcd-servers=" + l.etcdURL(),
		"--bind-address=" + bind,
		"--advertise-address=127.0.0.1",
		// The endpoint reconciler refuses a loopback address for the
		// `kubernetes` Service's endpoints, and nothing in the rig reaches the
		// API server through that Service: every client is on this host.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(l.apiServer),
		"--tls-cert-file=" + f.APIServerCert,
		"--tls-private-key-file=" + f.APIServerKey,
		"--client-ca-file=" + f.CACert,
		"--service-account-issuer=" + issuer.String(),
		"--service-account-key-file=" + f.SAPub,
		"--service-account-signing-key-file=" + f.SAKey,
		"--authorization-mode=Node,RBAC",
		"--admission-control-config-file=" + f.AdmissionConfig,
		"--requestheader-client-ca-file=" + f.FrontProxyCACert,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--cert-dir=" + l.path("pki"),
		// SLUICE_RIG_PROFILING=1 serves /debug/pprof, so a benchmark's API server
		// can be profiled (docs/benchmarks.md); off by default, as in most clusters.
		"--profiling=" + strconv.FormatBool(os.Getenv("SLUICE_RIG_PROFILING") == "1"),
		// Every simulated node's kubelet is kwok on this host (InternalIP
		// 127.0.0.1); the nodes' host names resolve nowhere.
		"--kubelet-preferred-address-types=InternalIP",
		// A real node's kubelet (realnode.go) takes only clients its CA signed.
		"--kubelet-client-certificate=" + f.KubeletClientCert,
		"--kubelet-client-key=" + f.KubeletClientKey,
	}
	if !defaultLimits {
		// The rig's clients (tests, benchmarks, the scheduler) are all trusted
		// and local; the default per-user fairness limits only skew benchmarks.
		args = append(args, "--max-requests-inflight=1600", "--max-mutating-requests-inflight=800")
	}
	return args
}

// controlPlaneClientArgs are the flags kube-controller-manager and
// kube-scheduler share: where the API server is, how to serve /healthz.
func (l layout) controlPlaneClientArgs(name string, port int, f pkiFiles) []string {
	kubeconfig := l.kubeconfig(name)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--client-ca-file=" + f.CACert,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + f.ServingCert,
		"--tls-private-key-file=" + f.ServingKey,
		"--leader-elect=false",
	}
}

// benchmarkControllers are the kube-controller-manager controllers of a Benchmark rig:
// service accounts and their tokens (pods are refused until their namespace's default
// ServiceAccount exists), namespaces, the root CA ConfigMap, and node lifecycle (it lifts
// the node.kubernetes.io/not-ready taint from new nodes). The others each decode every
// pod event and find nothing to do with bare pods.
var benchmarkControllers = []string{"serviceaccount-controller", "serviceaccount-token-controller", "namespace-controller",
	"root-ca-certificate-publisher-controller", "node-lifecycle-controller"}

// controllerManagerArgs are kube-controller-manager's flags; dra says the spec has a DRA
// pool, whose pods' claims from templates a Benchmark rig must then make and free.
func (l layout) controllerManagerArgs(f pkiFiles, benchmark, dra bool) []string {
	args := l.controlPlaneClientArgs("kube-controller-manager", l.kcm, f)
	qps, burst := 100, 200
	if benchmark {
		controllers := benchmarkControllers
		if dra {
			// The resource claim controller makes each pod's claim from its template
			// (the schedulers wait for it) and frees its devices when the pod goes
			// (deleting the claim is the garbage collector's, which a Benchmark rig
			// does not run). Making one is two writes (the claim, the pod's status),
			// which 100 requests/s would hold to 50 pods/s: raised as the benchmark
			// raises the contenders' own.
			controllers = append(slices.Clone(controllers), "resourceclaim-controller")
			qps, burst = 5000, 10000
		}
		// kwok renews the simulated nodes' Leases from the same two cores; a burst of
		// thousands of pods can hold it off past the default 50 s, and the node lifecycle
		// controller then taints healthy nodes unreachable for seconds: contenders that
		// honour taints lose those nodes' GPUs (a 4000-pod backlog's last pods waited for
		// one: docs/benchmarks.md, Sluice's scheduler alone, the node grace period), the
		// bare binder does not.
		args = append(args, "--controllers="+strings.Join(controllers, ","), "--node-monitor-grace-period=10m")
	}
	return append(args,
		"--service-account-private-key-file="+f.SAKey,
		"--root-ca-file="+f.CACert,
		"--cluster-signing-cert-file="+f.CACert,
		"--cluster-signing-key-file="+f.CAKey,
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range="+serviceCIDR,
		"--kube-api-qps="+strconv.Itoa(qps),
		"--kube-api-burst="+strconv.Itoa(burst),
	)
}

func (l layout) schedulerArgs(f pkiFiles) []string {
	return l.controlPlaneClientArgs("kube-scheduler", l.scheduler, f)
}

// kwokArgs run kwok as every simulated node's kubelet, serving their
// containers' logs (ClusterLogs in its config) on 127.0.0.1 over TLS, as
// the API server expects of a kubelet.
func (l layout) kwokArgs(f pkiFiles) []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig("kwok"),
		"--config=" + l.path("kwok", "stages.yaml"),
		"--manage-nodes-with-annotation-selector=" + fmt.Sprintf("%s=%s", annotationKwokNode, kwokNodeValue),
		"--cidr=" + podCIDR,
		"--node-ip=127.0.0.1",
		"--node-port=" + strconv.Itoa(l.kwok),
		"--server-address=127.0.0.1:" + strconv.Itoa(l.kwok),
		"--tls-cert-file=" + f.ServingCert,
		"--tls-private-key-file=" + f.ServingKey,
	}
}

// simulatedLog is what a simulated container's log reads: kwok runs no
// program, so there is no output to show. kwok reads the file in the
// container runtime's log format (time, stream, tag, text), as a kubelet
// reads its containers' logs.
func simulatedLog(at time.Time) []byte {
	var b strings.Builder
	for _, line := range []string{
		"[sluice rig] this pod ran on a simulated (kwok) node: no program ran, so it wrote no output.",
		"[sluice rig] on a real cluster this log is the job's stdout and stderr.",
	} {
		fmt.Fprintf(&b, "%s stdout F %s\n", at.UTC().Format(time.RFC3339Nano), line)
	}
	return []byte(b.String())
}

// kwokConfig is the rig's kwok --config: its stages and a ClusterLogs that
// gives every simulated container the log file at logFile.
func kwokConfig(logFile string) []byte {
	return append(append([]byte(nil), kwokStages...), fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: simulated-logs
spec:
  selector: {}
  logs:
  - logsFile: %q
`, logFile)...)
}
