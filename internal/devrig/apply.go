// Package devrig is what `sluice dev` sets up around the local rig (test/cluster) for the
// server it runs there: the seed objects it applies, the real nodes' partition and shared
// directory, and the users it maps to uids and hands tokens to.
package devrig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// ApplyFile server-side-applies every object of a multi-document YAML file,
// the way `kubectl apply --server-side` would, and returns how many.
func ApplyFile(ctx context.Context, cfg *rest.Config, path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return applyYAML(ctx, cfg, data)
}

// applyYAML is ApplyFile of YAML in memory.
func applyYAML(ctx context.Context, cfg *rest.Config, data []byte) (int, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	n := 0
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("document %d: %w", n+1, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return n, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		body, err := obj.MarshalJSON()
		if err != nil {
			return n, err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		force := true
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "sluice-dev", Force: &force}); err != nil {
			return n, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		n++
	}
}
