package kai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// apply creates every object of a multi-document manifest, as `kubectl create -f` would,
// namespaced ones in ns. It returns the first error, which a test of a refusal reads.
func apply(t *testing.T, cfg *rest.Config, ns, manifest string) error {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifest)), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Create(context.Background(), &obj, metav1.CreateOptions{}); err != nil && !(ns == "" && apierrors.IsAlreadyExists(err)) {
			return err
		}
	}
}

// sluice runs the sluice binary under test with args and returns what it printed.
func sluice(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(sluiceproc.Binary(t), args...).CombinedOutput()
	return string(out), err
}
