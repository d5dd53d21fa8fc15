package chart

import (
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// identityConfig is the part of the rendered config.yaml that says who jobs run as.
type identityConfig struct {
	Slurm struct {
		UnmappedUsers string `yaml:"unmappedUsers"`
		Identity      struct {
			PasswdFile string `yaml:"passwdFile"`
			GroupFile  string `yaml:"groupFile"`
			LDAP       struct {
				URL              string `yaml:"url"`
				BindPasswordFile string `yaml:"bindPasswordFile"`
			} `yaml:"ldap"`
		} `yaml:"identity"`
	} `yaml:"slurm"`
}

// TestIdentityValues: a default install refuses users it maps to no uid and
// reads no identity source; a site's passwd/group ConfigMap is mounted whole
// (no subPath, so its edits reach the server) where the config reads the
// files, and the LDAP bind password Secret where the config reads it.
func TestIdentityValues(t *testing.T) {
	parse := func(objs []*unstructured.Unstructured) identityConfig {
		t.Helper()
		var c identityConfig
		if err := yaml.Unmarshal([]byte(configText(t, objs)), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	objs := render(t, testNamespace)
	if c := parse(objs); c.Slurm.UnmappedUsers != "refuse" || c.Slurm.Identity.PasswdFile != "" || c.Slurm.Identity.LDAP.URL != "" {
		t.Errorf("default slurm identity config %+v, want unmapped users refused and no source", c.Slurm)
	}
	dep := find(t, objs, "Deployment", "sluice-server")
	if mounted(container(t, dep), "/etc/sluice/identity") || mounted(container(t, dep), "/etc/sluice/ldap") {
		t.Error("a default install mounts identity volumes")
	}

	objs = render(t, testNamespace, filepath.Join("testdata", "all-on.yaml"))
	c := parse(objs).Slurm.Identity
	dep = find(t, objs, "Deployment", "sluice-server")
	spec, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	mounts, _, _ := unstructured.NestedSlice(container(t, dep), "volumeMounts")
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, file := range []string{c.PasswdFile, c.GroupFile} {
		dir := filepath.Dir(file)
		var volume string
		for _, m := range mounts {
			m := m.(map[string]any)
			if m["mountPath"] == dir {
				volume, _ = m["name"].(string)
				if m["subPath"] != nil {
					t.Errorf("%s is mounted by subPath: the kubelet never updates it", dir)
				}
			}
		}
		cm := ""
		for _, v := range vols {
			if v.(map[string]any)["name"] == volume {
				cm, _, _ = unstructured.NestedString(v.(map[string]any), "configMap", "name")
			}
		}
		if cm != "site-users" {
			t.Errorf("%s: its directory is mounted from ConfigMap %q, want site-users", file, cm)
		}
	}
	if got := secretMountedAt(t, dep, filepath.Dir(c.LDAP.BindPasswordFile)); got != "site-ldap-bind" {
		t.Errorf("bindPasswordFile %s is mounted from Secret %q, want site-ldap-bind", c.LDAP.BindPasswordFile, got)
	}
}
