// Package examples embeds the example manifests of this directory and
// decodes them into typed objects, so `sluice dev` can seed its site from
// site.yaml and tests can submit the example workloads.
package examples

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

//go:embed *.yaml
var files embed.FS

// Site, KAIJob and GPUJob name the embedded example files.
const (
	Site   = "site.yaml"
	KAIJob = "kai-job.yaml"
	GPUJob = "gpu-job.yaml"
)

// Objects decodes the embedded example file name (Site, KAIJob, GPUJob).
func Objects(name string) ([]client.Object, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("examples: %w", err)
	}
	objs, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("examples: %s: %w", name, err)
	}
	return objs, nil
}

// Decode decodes every document of a multi-document YAML stream strictly
// (an unknown or duplicate field is an error) into the typed object of its
// kind: Kubernetes built-in kinds and Sluice's scheduling kinds.
func Decode(data []byte) ([]client.Object, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []client.Object
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue // comments only
		}
		obj, err := scheme.New(meta.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if err := unmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", n, meta.Kind, err)
		}
		cobj, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("document %d: %s is not an API object", n, meta.Kind)
		}
		objs = append(objs, cobj)
	}
}

// unmarshalStrict rejects duplicate keys and unknown fields, matching field
// names case-sensitively as the API server does (encoding/json would accept
// "schedulername" for schedulerName).
func unmarshalStrict(doc []byte, obj runtime.Object) error {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(data, obj)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
