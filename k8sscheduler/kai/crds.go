package kai

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

// CRDs are Sluice's minimal schemas of KAI's Queue and PodGroup (crds/).
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		data, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("kai: %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// InstallCRDs creates the KAI CRDs a cluster does not have yet (`sluice dev`, the rig's
// tests) and waits until they are served. One that exists, KAI's own above all, is left
// as it is: Sluice reads KAI's objects and never changes their definition.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kai CRDs: %w", err)
	}
	defs, err := CRDs()
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range defs {
		if _, err := api.Create(ctx, crd, metav1.CreateOptions{FieldManager: "sluice"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kai CRDs: creating %s: %w", crd.Name, err)
		}
	}
	for _, crd := range defs {
		if err := crds.WaitEstablished(ctx, api, crd.Name); err != nil {
			return fmt.Errorf("kai CRDs: %w", err)
		}
	}
	return nil
}
