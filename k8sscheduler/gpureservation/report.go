// Package gpureservation is the inside of a GPU reservation pod: the pod the scheduler
// creates, bound, to hold one shared GPU in the NVIDIA device plugin's books
// (docs/architecture.md, "Shared GPUs and the device plugin"). The pod asks for
// nvidia.com/gpu: 1; the kubelet picks the device and hands it to the container as
// NVIDIA_VISIBLE_DEVICES; the pod writes that device on itself, and the scheduler points
// the fraction pods of that GPU at it.
package gpureservation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Environment variables the reservation pod reads: its own name and namespace (the
// downward API) and the device the NVIDIA container runtime exposes.
const (
	PodNameEnv      = "POD_NAME"
	PodNamespaceEnv = "POD_NAMESPACE"
)

// Device is the one device NVIDIA_VISIBLE_DEVICES names. The device plugin gave the pod
// exactly one GPU; anything else (unset, "void", "none", "all", a list) means the pod
// did not get one device from the plugin, and reporting it would point fraction pods at
// the wrong GPUs.
func Device(visible string) (string, error) {
	v := strings.TrimSpace(visible)
	switch {
	case v == "" || v == "void" || v == "none":
		return "", fmt.Errorf("%s=%q names no GPU: is the NVIDIA device plugin running on this node, and does it pass devices as %s?",
			v1alpha1.VisibleDevicesEnv, visible, v1alpha1.VisibleDevicesEnv)
	case v == "all" || strings.Contains(v, ","):
		return "", fmt.Errorf("%s=%q names more than the one GPU this pod asked for", v1alpha1.VisibleDevicesEnv, visible)
	}
	return v, nil
}

// Report writes the device the pod was given on the pod (v1alpha1.ReservedGPUAnnotation).
// getenv reads the pod's environment.
func Report(ctx context.Context, kube kubernetes.Interface, getenv func(string) string) (string, error) {
	name, ns := getenv(PodNameEnv), getenv(PodNamespaceEnv)
	if name == "" || ns == "" {
		return "", fmt.Errorf("%s and %s must name this pod (the downward API sets them in the reservation pod)", PodNameEnv, PodNamespaceEnv)
	}
	dev, err := Device(getenv(v1alpha1.VisibleDevicesEnv))
	if err != nil {
		return "", err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.ReservedGPUAnnotation: dev}}})
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("writing the reserved GPU on pod %s/%s: %w", ns, name, err)
	}
	return dev, nil
}

// Run is `sluice gpu-reservation`: report the device, then hold it until ctx ends (the
// pod is deleted when the last fraction on its GPU ends).
func Run(ctx context.Context, kube kubernetes.Interface, getenv func(string) string) error {
	if _, err := Report(ctx, kube, getenv); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
