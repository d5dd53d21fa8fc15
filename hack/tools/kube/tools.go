//go:build tools

// Package kube pins the Kubernetes control-plane binaries, controller-gen and
// helm that the rig and the chart work need. It is never compiled into
// Sluice; hack/tools builds these packages into ./bin.
package kube

import (
	_ "helm.sh/helm/v4/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
