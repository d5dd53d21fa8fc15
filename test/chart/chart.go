// Package chart checks the Helm chart (its tests) and renders and applies it to a rig for
// whoever runs Sluice as the chart installs it: the chart tests, and the scale benchmark,
// which runs the server as the chart's ServiceAccount under the chart's RBAC and FlowSchema.
package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Release is the release name everything here renders the chart as.
const Release = "sluice"

// RepoRoot is the nearest directory at or above the working directory that holds the
// chart (charts/sluice/Chart.yaml): the repository root.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "charts", "sluice", "Chart.yaml")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no charts/sluice above the working directory: run from the repository")
		}
		dir = parent
	}
}

// Dir is the chart's directory in the repository.
func Dir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "sluice"), nil
}

// HelmBinary finds helm where `make tools` puts it: assets, then $SLUICE_ASSETS, then
// the repository's bin/.
func HelmBinary(assets string) (string, error) {
	var dirs []string
	for _, d := range []string{assets, os.Getenv("SLUICE_ASSETS")} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if root, err := RepoRoot(); err == nil {
		dirs = append(dirs, filepath.Join(root, "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "helm")
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("helm not found in %s: run `make tools` to build it", strings.Join(dirs, " or "))
}

// Helm runs helm and returns its stdout, or an error carrying its stderr. No user
// configuration or cache leaks in, and nothing is written outside a temporary home.
func Helm(helm string, args ...string) (string, error) {
	home, err := os.MkdirTemp("", "sluice-helm-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String() + "\n" + err.Error()))
	}
	return stdout.String(), nil
}

// Render is `helm template` of the chart as Release in namespace, with the extra
// arguments (--values, --show-only, --include-crds), decoded into objects.
func Render(helm, namespace string, args ...string) ([]*unstructured.Unstructured, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	out, err := Helm(helm, append([]string{"template", Release, dir, "--namespace", namespace}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("helm template: %w", err)
	}
	objs, err := Decode(out)
	if err != nil {
		return nil, fmt.Errorf("decoding helm template's output: %w", err)
	}
	return objs, nil
}

// Decode reads a stream of YAML or JSON documents into objects, skipping empty ones.
func Decode(manifests string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue // an empty document
		}
		// Unstructured's own JSON decoding keeps integers as int64.
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
}

// Apply server-side-applies the CRDs among objs, waits until they are Established and
// served, then applies everything else. It returns the kinds the API server does not
// serve, which it skips.
func Apply(ctx context.Context, cfg *rest.Config, fieldManager string, objs []*unstructured.Unstructured) (skipped []string, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disco)
	apply := func(ri dynamic.ResourceInterface, o *unstructured.Unstructured) error {
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("server-side apply of %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		return nil
	}
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, o := range crds {
		if err := apply(dyn.Resource(crdGVR), o); err != nil {
			return nil, err
		}
	}
	for _, o := range crds {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := dyn.Resource(crdGVR).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			last = fmt.Errorf("conditions %v", conds)
			return false, nil
		})
		if err != nil {
			return nil, fmt.Errorf("CRD %s not Established: %w (%v)", o.GetName(), err, last)
		}
	}
	// Established is not yet served: discovery may lag it by a moment, and a kind it
	// does not list yet would be taken for one the cluster cannot serve.
	for _, o := range crds {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			disco.Invalidate()
			mapper.Reset()
			_, last = mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
			return last == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("discovery not serving %s: %w (%v)", kind, err, last)
		}
	}
	for _, o := range rest {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			skipped = append(skipped, gvk.Kind)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("mapping %s: %w", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if err := apply(ri, o); err != nil {
			return nil, err
		}
	}
	return skipped, nil
}

// TokenConfig is a client configuration for a ServiceAccount, authenticated only by a
// token from the TokenRequest API (no client certificate), valid for ttl and bound to
// ref where given, as the kubelet binds the token it projects into a pod to that pod.
// admin is the cluster's address and CA; kube asks for the token.
func TokenConfig(ctx context.Context, kube kubernetes.Interface, admin *rest.Config, ns, sa string, ttl time.Duration, ref *authnv1.BoundObjectReference) (*rest.Config, error) {
	exp := int64(ttl / time.Second)
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp, BoundObjectRef: ref}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenRequest for %s/%s bound to %+v: %w", ns, sa, ref, err)
	}
	return &rest.Config{
		Host:            admin.Host,
		BearerToken:     tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile, ServerName: admin.ServerName},
	}, nil
}

// WriteKubeconfig writes cfg (a token and the CA) as a kubeconfig file for user.
func WriteKubeconfig(path, user string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[user] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: user}
	kc.CurrentContext = user
	return clientcmd.WriteToFile(*kc, path)
}
