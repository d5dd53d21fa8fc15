package gpureservation_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluicehq/sluice/k8sscheduler/gpureservation"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// reporterEnv, set by a test, makes the test binary run as `sluice gpu-reservation` does
// (Run, with the process's own environment) against the kubeconfig it names, instead of
// running the tests: the reporter is tested as the separate process it is in a pod.
const reporterEnv = "SLUICE_TEST_RUN_REPORTER_KUBECONFIG"

func TestMain(m *testing.M) {
	if kubeconfig := os.Getenv(reporterEnv); kubeconfig != "" {
		os.Exit(runReporter(kubeconfig))
	}
	os.Exit(e2e.Main(m, cluster.Spec{NodePools: []cluster.NodePool{
		{Name: "rsv", Count: 1, GPUsPerNode: 2, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "8", Memory: "64Gi"},
	}}))
}

func runReporter(kubeconfig string) int {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := gpureservation.Run(ctx, kube, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
