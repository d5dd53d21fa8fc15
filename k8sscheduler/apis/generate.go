// Package apis holds Sluice's Kubernetes API types; this file regenerates
// their deepcopy functions and the CRD manifests embedded by package crds.
package apis

//go:generate ../../bin/controller-gen object paths=./scheduling/... crd:maxDescLen=400 output:crd:artifacts:config=crds
