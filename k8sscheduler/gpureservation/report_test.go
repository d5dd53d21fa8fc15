package gpureservation_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/gpureservation"
	"github.com/sluicehq/sluice/test/e2e"
)

// reporter starts the reporter as its own process, with the environment a reservation
// pod's container has, and stops it (SIGTERM, as the kubelet does) when the test ends.
func reporter(t *testing.T, kubeconfig string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{reporterEnv + "=" + kubeconfig}, env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	})
	return cmd, &out
}

func TestReporterWritesTheDeviceItWasGiven(t *testing.T) {
	rig := e2e.Rig(t)
	ns := e2e.Namespace(t, rig)
	kube := rig.Client()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: "rsv-0", Containers: []corev1.Container{{Name: "reserve", Image: "sluice"}}},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const device = "GPU-5c1e0000-0000-4000-8000-00000000000a"
	cmd, out := reporter(t, rig.Kubeconfig, gpureservation.PodNameEnv+"=holder", gpureservation.PodNamespaceEnv+"="+ns, v1alpha1.VisibleDevicesEnv+"="+device)
	e2e.WaitFor(t, "the reporter's device on its pod", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "holder", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := p.Annotations[v1alpha1.ReservedGPUAnnotation]; got != device {
			return false, fmt.Errorf("annotation %q; reporter output %q", got, out.String())
		}
		return true, nil
	})
	// It then holds the GPU: still running until told to stop (watched for a
	// second after its report), and stops cleanly.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the reporter exited after reporting: %v %s", err, out)
	case <-time.After(time.Second):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("reporter after SIGTERM: %v, output %q", err, out)
	}
}

func TestReporterWithoutADeviceFailsAndSaysWhy(t *testing.T) {
	rig := e2e.Rig(t)
	for _, visible := range []string{"", "all"} {
		cmd, out := reporter(t, rig.Kubeconfig, gpureservation.PodNameEnv+"=holder", gpureservation.PodNamespaceEnv+"=default", v1alpha1.VisibleDevicesEnv+"="+visible)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out.String(), v1alpha1.VisibleDevicesEnv) {
			t.Errorf("NVIDIA_VISIBLE_DEVICES=%q: exit %v, output %q; want exit 1 naming the variable", visible, err, out)
		}
	}
}
