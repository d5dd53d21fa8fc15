package chart

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const testNamespace = "sluice-system"

// TestLintAndTemplate: the default values and a file turning every option on
// both lint cleanly and render what a user would expect of them.
func TestLintAndTemplate(t *testing.T) {
	allOn := filepath.Join("testdata", "all-on.yaml")
	ownDSNSecret := writeValues(t, "ledger: {type: postgres, postgres: {existingSecret: sluice-db, existingSecretKey: url}}")
	ownCert := writeValues(t, "webhook: {tls: {existingSecret: site-webhook-cert}}")
	clientCA := writeValues(t, "webhook: {clientAuth: {caBundle: \"-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n\", commonNames: [apiserver-webhook]}}")
	tests := []struct {
		name   string
		values []string
		check  func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"default", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			n := kinds(objs)
			for kind, want := range map[string]int{"CustomResourceDefinition": 5, "PersistentVolumeClaim": 1, "DaemonSet": 1,
				"ServiceMonitor": 0, "NetworkPolicy": 0, "Partition": 0, "Queue": 0, "QOS": 0} {
				if n[kind] != want {
					t.Errorf("%d %s rendered, want %d", n[kind], kind, want)
				}
			}
			dep := find(t, objs, "Deployment", "sluice-server")
			if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 1 {
				t.Errorf("server replicas %d, want 1 (the default ledger is SQLite)", r)
			}
			c := container(t, dep)
			for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				if got, _, _ := unstructured.NestedString(c, probe, "httpGet", "path"); got != path {
					t.Errorf("%s on %q, want %q", probe, got, path)
				}
			}
			if _, ok, _ := unstructured.NestedMap(c, "resources", "requests"); !ok {
				t.Error("server container has no resource requests")
			}
			// The server's requests go to kube-scheduler's priority level, as its own
			// service account.
			fs := find(t, objs, "FlowSchema", "sluice-server")
			if pl, _, _ := unstructured.NestedString(fs.Object, "spec", "priorityLevelConfiguration", "name"); pl != "workload-high" {
				t.Errorf("FlowSchema priority level %q, want workload-high", pl)
			}
			if !strings.Contains(toJSON(t, fs), `"serviceAccount":{"name":"sluice-server","namespace":"`+testNamespace+`"}`) {
				t.Errorf("FlowSchema does not match the server's service account: %s", toJSON(t, fs))
			}
			// The server holds the Go collector under the container's memory limit.
			env, _, _ := unstructured.NestedSlice(c, "env")
			if !slices.ContainsFunc(env, func(e any) bool {
				m := e.(map[string]any)
				ref, _, _ := unstructured.NestedString(m, "valueFrom", "resourceFieldRef", "resource")
				return m["name"] == "SLUICE_MEMORY_LIMIT" && ref == "limits.memory"
			}) {
				t.Errorf("server env %v lacks SLUICE_MEMORY_LIMIT from limits.memory", env)
			}
			agent := find(t, objs, "DaemonSet", "sluice-agent")
			spec, _, _ := unstructured.NestedMap(agent.Object, "spec", "template", "spec")
			if spec["runtimeClassName"] != "nvidia" {
				t.Errorf("agent runtimeClassName %v, want nvidia", spec["runtimeClassName"])
			}
			if sel, _, _ := unstructured.NestedStringMap(spec, "nodeSelector"); sel["nvidia.com/gpu.present"] != "true" {
				t.Errorf("agent nodeSelector %v, want nvidia.com/gpu.present=true", sel)
			}
			ac := container(t, agent)
			if p, _, _ := unstructured.NestedBool(ac, "securityContext", "privileged"); p {
				t.Error("agent is privileged")
			}
			if caps, _, _ := unstructured.NestedStringSlice(ac, "securityContext", "capabilities", "drop"); !slices.Equal(caps, []string{"ALL"}) {
				t.Errorf("agent drops capabilities %v, want [ALL]", caps)
			}
			mounts, _, _ := unstructured.NestedSlice(ac, "volumeMounts")
			if len(mounts) != 1 || mounts[0].(map[string]any)["mountPath"] != "/host/sys" || mounts[0].(map[string]any)["readOnly"] != true {
				t.Errorf("agent mounts %v, want only /host/sys read-only", mounts)
			}
			cfg := serverConfig(t, objs)
			if cfg.Webhook.ServiceName != "sluice-webhook" || cfg.Webhook.ServiceNamespace != testNamespace {
				t.Errorf("webhook registered behind %s/%s, want %s/sluice-webhook", cfg.Webhook.ServiceNamespace, cfg.Webhook.ServiceName, testNamespace)
			}
			find(t, objs, "Service", cfg.Webhook.ServiceName)
			// The server makes and rotates the certificate (in its own Secret): the chart
			// renders none, and gives the server a memory volume to copy it into.
			for _, o := range objs {
				if o.GetKind() == "Secret" && strings.Contains(o.GetName(), "webhook") {
					t.Errorf("the chart rendered webhook Secret %s; the server makes its certificate", o.GetName())
				}
			}
			if vol := volumeMountedAt(t, dep, cfg.Webhook.CertDir); toJSON(t, vol["emptyDir"]) != `{"medium":"Memory","sizeLimit":"1Mi"}` {
				t.Errorf("webhook.certDir %s is on volume %s, want a memory emptyDir", cfg.Webhook.CertDir, toJSON(t, vol))
			}
			// The API server calls the Service's .svc name, the one cert-controller checks the certificate for.
			if len(cfg.Webhook.Hosts) == 0 || cfg.Webhook.Hosts[0] != "sluice-webhook."+testNamespace+".svc" {
				t.Errorf("webhook hosts %v do not start with the Service's DNS name", cfg.Webhook.Hosts)
			}
			if rules := toJSON(t, find(t, objs, "Role", "sluice-server")); !strings.Contains(rules, `"resourceNames":["sluice-webhook-certs"],"resources":["secrets"],"verbs":["update"]`) {
				t.Errorf("Role does not let the server update its certificate Secret: %s", rules)
			}
			if cfg.LeaderElection.Namespace != testNamespace {
				t.Errorf("Lease namespace %q, want the release namespace", cfg.LeaderElection.Namespace)
			}
			role := find(t, objs, "Role", "sluice-server")
			if !strings.Contains(toJSON(t, role), `"`+cfg.LeaderElection.LeaseName+`"`) {
				t.Errorf("Role does not name the Lease %q the server takes", cfg.LeaderElection.LeaseName)
			}
			if !mounted(c, filepath.Dir(cfg.REST.JWTKeyFile)) {
				t.Errorf("the JWT key file %s is not on a mounted volume", cfg.REST.JWTKeyFile)
			}
		}},
		{"every option on", []string{allOn}, func(t *testing.T, objs []*unstructured.Unstructured) {
			n := kinds(objs)
			for kind, want := range map[string]int{"ServiceMonitor": 1, "NetworkPolicy": 1, "PodDisruptionBudget": 1,
				"Partition": 2, "Queue": 4, "QOS": 3, "PersistentVolumeClaim": 0} {
				if n[kind] != want {
					t.Errorf("%d %s rendered, want %d", n[kind], kind, want)
				}
			}
			// The DSN carries a password: it is a file from its own Secret,
			// never in the ConfigMap.
			if text := configText(t, objs); strings.Contains(text, "postgres://") {
				t.Errorf("the ConfigMap holds the DSN:\n%s", text)
			}
			acct := serverConfig(t, objs).Accounting
			if acct.DSN != "" || acct.DSNFile == "" {
				t.Errorf("accounting dsn %q dsnFile %q, want only dsnFile", acct.DSN, acct.DSNFile)
			}
			dsnSecret := find(t, objs, "Secret", "sluice-ledger-dsn")
			if dsn, _, _ := unstructured.NestedString(dsnSecret.Object, "stringData", "dsn"); !strings.HasPrefix(dsn, "postgres://sluice:secret@") {
				t.Errorf("Secret sluice-ledger-dsn holds %q, want the PostgreSQL DSN", dsn)
			}
			if got := secretMountedAt(t, find(t, objs, "Deployment", "sluice-server"), filepath.Dir(acct.DSNFile)); got != "sluice-ledger-dsn" {
				t.Errorf("accounting.dsnFile %s is mounted from Secret %q, want sluice-ledger-dsn", acct.DSNFile, got)
			}
			args, _, _ := unstructured.NestedStringSlice(container(t, find(t, objs, "DaemonSet", "sluice-agent")), "args")
			for _, want := range []string{"--ib-rate=A100=200,H100=400", "--ib-ports=8", "--expected-gpus=8", "--poll=5s"} {
				if !slices.Contains(args, want) {
					t.Errorf("agent args %v lack %s", args, want)
				}
			}
			cfg := serverConfig(t, objs)
			if !slices.Equal(cfg.Webhook.ExtraSchedulerNames, []string{"kai-scheduler"}) || cfg.REST.ClusterName != "gpu-east" {
				t.Errorf("config did not take the values: %+v", cfg)
			}
		}},
		{"only the API server's certificate reaches the webhook", []string{clientCA}, func(t *testing.T, objs []*unstructured.Unstructured) {
			cm := find(t, objs, "ConfigMap", "sluice-server-webhook-client-ca")
			if ca, _, _ := unstructured.NestedString(cm.Object, "data", "ca.crt"); !strings.Contains(ca, "BEGIN CERTIFICATE") {
				t.Errorf("client CA ConfigMap holds %q", ca)
			}
			w := serverConfig(t, objs).Webhook
			if w.ClientCAFile != "/etc/sluice/webhook-client/ca.crt" || len(w.ClientNames) != 1 || w.ClientNames[0] != "apiserver-webhook" {
				t.Errorf("webhook config clientCAFile %q clientNames %v", w.ClientCAFile, w.ClientNames)
			}
			mounts, _, _ := unstructured.NestedSlice(container(t, find(t, objs, "Deployment", "sluice-server")), "volumeMounts")
			mounted := false
			for _, m := range mounts {
				mounted = mounted || m.(map[string]any)["mountPath"] == "/etc/sluice/webhook-client"
			}
			if !mounted {
				t.Errorf("the client CA is not mounted where webhook.clientCAFile points: %v", mounts)
			}
		}},
		{"the site's webhook certificate", []string{ownCert}, func(t *testing.T, objs []*unstructured.Unstructured) {
			cfg := serverConfig(t, objs)
			dep := find(t, objs, "Deployment", "sluice-server")
			if got := secretMountedAt(t, dep, cfg.Webhook.CertDir); got != "site-webhook-cert" {
				t.Errorf("webhook.certDir %s is mounted from Secret %q, want site-webhook-cert", cfg.Webhook.CertDir, got)
			}
			// The file names the server serves and registers, and nothing else (no CA key).
			items, _, _ := unstructured.NestedSlice(volumeMountedAt(t, dep, cfg.Webhook.CertDir), "secret", "items")
			if want := `[{"key":"ca.crt","path":"ca.crt"},{"key":"tls.crt","path":"tls.crt"},{"key":"tls.key","path":"tls.key"}]`; toJSON(t, items) != want {
				t.Errorf("Secret site-webhook-cert is mounted with items %s, want %s", toJSON(t, items), want)
			}
			// No rotator: no right on Secrets of the namespace.
			if rules := toJSON(t, find(t, objs, "Role", "sluice-server")); strings.Contains(rules, "secrets") {
				t.Errorf("Role grants Secrets although the site provides the certificate: %s", rules)
			}
		}},
		{"PostgreSQL DSN from the user's Secret", []string{ownDSNSecret}, func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				if o.GetKind() == "Secret" && o.GetName() == "sluice-ledger-dsn" {
					t.Error("the chart made a DSN Secret although ledger.postgres.existingSecret names one")
				}
			}
			acct := serverConfig(t, objs).Accounting
			dep := find(t, objs, "Deployment", "sluice-server")
			if got := secretMountedAt(t, dep, filepath.Dir(acct.DSNFile)); got != "sluice-db" {
				t.Errorf("accounting.dsnFile %s is mounted from Secret %q, want sluice-db", acct.DSNFile, got)
			}
			// The user's key lands under the file name the config names.
			want := `[{"key":"url","path":"` + filepath.Base(acct.DSNFile) + `"}]`
			vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				if name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); name == "sluice-db" {
					if items, _, _ := unstructured.NestedSlice(v.(map[string]any), "secret", "items"); toJSON(t, items) != want {
						t.Errorf("Secret sluice-db is mounted with items %s, want %s", toJSON(t, items), want)
					}
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir(t), "--namespace", testNamespace}
			for _, f := range tc.values {
				args = append(args, "--values", f)
			}
			if out, err := helm(t, args...); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
			tc.check(t, render(t, testNamespace, tc.values...))
		})
	}
}

// TestSchemaRejectsBadValues: a bad value fails the install with its path and why.
func TestSchemaRejectsBadValues(t *testing.T) {
	tests := []struct{ values, want string }{
		{"ledger: {type: mysql}", "at '/ledger/type': value must be one of 'sqlite', 'postgres'"},
		{"server: {replicas: two}", "at '/server/replicas': got string, want integer"},
		{"server: {replicas: 0}", "at '/server/replicas': minimum: got 0, want 1"},
		{"config: {log: {levle: debug}}", "at '/config/log': additional properties 'levle' not allowed"},
		{"config: {leaderElection: {leaseDuration: 15 seconds}}", "at '/config/leaderElection/leaseDuration': '15 seconds' does not match"},
		{"config: {remediation: {breakerShare: 2}}", "at '/config/remediation/breakerShare': maximum: got 2, want 1"},
		{"ledger: {type: postgres}", "at '/ledger/postgres/dsn': minLength: got 0, want 1"},
		{"ledger: {type: postgres, postgres: {dsn: 'postgres://db', existingSecret: db}}", "at '/ledger/postgres/existingSecret': maxLength: got 2, want 0"},
		{"ledger: {postgres: {existingSecretKey: 'a b'}}", "at '/ledger/postgres/existingSecretKey': 'a b' does not match"},
		{"ledger: {postgres: {dsn: 'mysql://db'}}", "at '/ledger/postgres/dsn': 'mysql://db' does not match"},
		{"ledger: {sqlite: {persistence: {accessMode: ReadWriteMany}}}", "at '/ledger/sqlite/persistence/accessMode'"},
		{"agent: {ibRates: {H100: -1}}", "at '/agent/ibRates/H100': exclusiveMinimum: got -1, want 0"},
		{"webhook: {extraSchedulerNames: [Bad_Name]}", "at '/webhook/extraSchedulerNames/0': 'Bad_Name' does not match"},
		{"webhook: {tls: {validityDays: 30}}", "at '/webhook/tls/validityDays': minimum: got 30, want 400"},
		{"webhook: {clientAuth: {caBundle: not-a-pem}}", "at '/webhook/clientAuth/caBundle': 'not-a-pem' does not match"},
		{"image: {digest: latest}", "at '/image/digest': 'latest' does not match"},
		{"sever: {replicas: 2}", "additional properties 'sever' not allowed"},
		{"config: {slurm: {unmappedUsers: allow}}", "at '/config/slurm/unmappedUsers': value must be one of 'run', 'refuse'"},
		{"config: {slurm: {defaultUser: {uid: 0, gid: 0}}}", "at '/config/slurm/defaultUser/uid': minimum: got 0, want 1"},
	}
	for _, tc := range tests {
		t.Run(tc.values, func(t *testing.T) {
			out, err := helm(t, "template", "sluice", chartDir(t), "--values", writeValues(t, tc.values))
			if err == nil {
				t.Fatalf("values %q rendered:\n%.300s", tc.values, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error for %q:\n%v\nwant it to contain %q", tc.values, err, tc.want)
			}
		})
	}
}

// TestSQLiteLedgerHasOneReplica: a SQLite ledger is one file on one node, so the
// chart refuses a standby with it and replaces its one pod rather than surge a
// second onto the volume; PostgreSQL takes any number of replicas.
func TestSQLiteLedgerHasOneReplica(t *testing.T) {
	postgres := "ledger: {type: postgres, postgres: {dsn: 'postgres://sluice@db/sluice'}}\n"
	tests := []struct {
		name, values string
		refused      string // the error helm template fails with; "" when it renders
		replicas     int64
		strategy     string // the Deployment's update strategy
		pdb          bool
	}{
		{name: "sqlite, default replicas", replicas: 1, strategy: "Recreate"},
		{name: "sqlite, 2 replicas", values: "server: {replicas: 2}",
			refused: "server.replicas is 2, but ledger.type sqlite allows 1 replica"},
		{name: "sqlite without a volume, 3 replicas", values: "server: {replicas: 3}\nledger: {sqlite: {persistence: {enabled: false}}}",
			refused: "server.replicas is 3, but ledger.type sqlite allows 1 replica"},
		{name: "postgres, 2 replicas", values: postgres + "server: {replicas: 2}", replicas: 2, strategy: "RollingUpdate", pdb: true},
		{name: "postgres, default replicas", values: postgres, replicas: 1, strategy: "RollingUpdate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, "template", "sluice", chartDir(t), "--namespace", testNamespace, "--values", writeValues(t, tc.values))
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("helm template with %q: %v\n%.300s\nwant it refused with %q", tc.values, err, out, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("helm template with %q: %v", tc.values, err)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			dep := find(t, objs, "Deployment", "sluice-server")
			if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != tc.replicas {
				t.Errorf("server replicas %d, want %d", r, tc.replicas)
			}
			if s, _, _ := unstructured.NestedString(dep.Object, "spec", "strategy", "type"); s != tc.strategy {
				t.Errorf("update strategy %q, want %q", s, tc.strategy)
			}
			if got := kinds(objs)["PodDisruptionBudget"] == 1; got != tc.pdb {
				t.Errorf("PodDisruptionBudget rendered: %v, want %v", got, tc.pdb)
			}
		})
	}
}

// serverConfig is the server configuration file the chart's ConfigMap holds,
// decoded with the field names of internal/serverconfig's Config.
type renderedConfig struct {
	StateDir       string `yaml:"stateDir"`
	LeaderElection struct {
		Namespace string `yaml:"namespace"`
		LeaseName string `yaml:"leaseName"`
	} `yaml:"leaderElection"`
	Accounting struct {
		DSN     string `yaml:"dsn"`
		DSNFile string `yaml:"dsnFile"`
	} `yaml:"accounting"`
	REST struct {
		JWTKeyFile  string `yaml:"jwtKeyFile"`
		ClusterName string `yaml:"clusterName"`
	} `yaml:"rest"`
	Webhook struct {
		CertDir             string   `yaml:"certDir"`
		Hosts               []string `yaml:"hosts"`
		ServiceName         string   `yaml:"serviceName"`
		ServiceNamespace    string   `yaml:"serviceNamespace"`
		ExtraSchedulerNames []string `yaml:"extraSchedulerNames"`
		ClientCAFile        string   `yaml:"clientCAFile"`
		ClientNames         []string `yaml:"clientNames"`
	} `yaml:"webhook"`
}

func serverConfig(t testing.TB, objs []*unstructured.Unstructured) renderedConfig {
	t.Helper()
	text := configText(t, objs)
	var cfg renderedConfig
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("the server's config.yaml does not parse: %v\n%s", err, text)
	}
	return cfg
}

// configText is config.yaml from the server's ConfigMap.
func configText(t testing.TB, objs []*unstructured.Unstructured) string {
	t.Helper()
	text, _, _ := unstructured.NestedString(find(t, objs, "ConfigMap", "sluice-server").Object, "data", "config.yaml")
	if text == "" {
		t.Fatal("ConfigMap sluice-server has no config.yaml")
	}
	return text
}

func container(t testing.TB, workload *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%s %s has %d containers, want 1", workload.GetKind(), workload.GetName(), len(cs))
	}
	return cs[0].(map[string]any)
}

// secretMountedAt is the Secret whose volume the workload's container
// mounts at dir ("" when none is).
func secretMountedAt(t testing.TB, workload *unstructured.Unstructured, dir string) string {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(workload.Object, "spec", "template", "spec")
	return podSecretMountedAt(spec, dir)
}

// podSecretMountedAt is secretMountedAt for a pod spec (its first container).
func podSecretMountedAt(podSpec map[string]any, dir string) string {
	cs, _, _ := unstructured.NestedSlice(podSpec, "containers")
	if len(cs) == 0 {
		return ""
	}
	mounts, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "volumeMounts")
	vols, _, _ := unstructured.NestedSlice(podSpec, "volumes")
	for _, m := range mounts {
		if m.(map[string]any)["mountPath"] != dir {
			continue
		}
		for _, v := range vols {
			if v.(map[string]any)["name"] == m.(map[string]any)["name"] {
				name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
				return name
			}
		}
	}
	return ""
}

func mounted(c map[string]any, dir string) bool {
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, m := range mounts {
		if m.(map[string]any)["mountPath"] == dir {
			return true
		}
	}
	return false
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkServingCert: the generated serving certificate is signed by the
// generated CA and valid for every name the server is configured with, and
// the CA lives longer than the year the server insists on.
// volumeMountedAt is the volume the workload's container mounts at dir (nil when none is).
func volumeMountedAt(t testing.TB, workload *unstructured.Unstructured, dir string) map[string]any {
	t.Helper()
	mounts, _, _ := unstructured.NestedSlice(container(t, workload), "volumeMounts")
	vols, _, _ := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "volumes")
	for _, m := range mounts {
		if m.(map[string]any)["mountPath"] != dir {
			continue
		}
		for _, v := range vols {
			if v.(map[string]any)["name"] == m.(map[string]any)["name"] {
				return v.(map[string]any)
			}
		}
	}
	return nil
}
