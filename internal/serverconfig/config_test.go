package serverconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/kube"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string // substring; empty means success
		check   func(t *testing.T, c Config)
	}{
		{name: "empty file means defaults", yaml: "", check: func(t *testing.T, c Config) {
			if c.Listen != ":6820" || c.SchedulerName != "sluice" || !c.LeaderElection.Enabled {
				t.Errorf("defaults not applied: %+v", c)
			}
		}},
		{name: "site filesystems", yaml: "slurm:\n  filesystems:\n" +
			"  - {name: home, mountPath: /home, nfs: {server: nfs.example, path: /export/home}}\n" +
			"  - {name: scratch, mountPath: /scratch, partitions: [h100], persistentVolumeClaim: {claimName: scratch}, readOnly: true}\n",
			check: func(t *testing.T, c Config) {
				fss, err := c.Slurm.PodFilesystems()
				if err != nil || len(fss) != 2 || fss[0].NFS == nil || fss[0].NFS.Server != "nfs.example" ||
					fss[1].PersistentVolumeClaim == nil || fss[1].PersistentVolumeClaim.ClaimName != "scratch" || !fss[1].ReadOnly ||
					len(fss[1].Partitions) != 1 || fss[1].Partitions[0] != "h100" {
					t.Errorf("filesystems %+v, %v", fss, err)
				}
			}},
		{name: "site filesystem with an unknown field", yaml: "slurm:\n  filesystems:\n  - {name: home, mountPath: /home, nfs: {server: s, path: /p, sever: t}}\n",
			wantErr: `slurm.filesystems[0]: json: unknown field "sever"`},
		{name: "site filesystem without a source", yaml: "slurm:\n  filesystems:\n  - {name: home, mountPath: /home}\n",
			wantErr: "slurm.filesystems: filesystem home: want exactly one source"},
		{name: "fields override defaults", yaml: "listen: 127.0.0.1:7000\nlog:\n  format: json\nleaderElection:\n  leaseDuration: 30s\n",
			check: func(t *testing.T, c Config) {
				if c.Listen != "127.0.0.1:7000" || c.Log.Format != "json" || c.Log.Level != "info" {
					t.Errorf("got %+v", c)
				}
				if time.Duration(c.LeaderElection.LeaseDuration) != 30*time.Second {
					t.Errorf("leaseDuration = %s", c.LeaderElection.LeaseDuration)
				}
			}},
		{name: "submissions are rate limited and the HTTP server has timeouts by default", yaml: "", check: func(t *testing.T, c Config) {
			l := c.REST.SubmitLimits()
			if l.Default.PerSecond <= 0 || l.Default.Burst <= 0 {
				t.Errorf("default submit limit %+v, want one", l.Default)
			}
			r := c.REST
			if r.ReadHeaderTimeout <= 0 || r.ReadTimeout <= 0 || r.WriteTimeout <= 0 || r.IdleTimeout <= 0 {
				t.Errorf("timeouts %s %s %s %s, want all set", r.ReadHeaderTimeout, r.ReadTimeout, r.WriteTimeout, r.IdleTimeout)
			}
		}},
		{name: "rate limit per user", yaml: "rest:\n  submitRateLimit:\n    perSecond: 5\n    burst: 10\n    users:\n      pipeline: {perSecond: 0}\n",
			check: func(t *testing.T, c Config) {
				l := c.REST.SubmitLimits()
				if l.Default.PerSecond != 5 || l.Default.Burst != 10 || l.Users["pipeline"].PerSecond != 0 || len(l.Users) != 1 {
					t.Errorf("limits %+v", l)
				}
			}},
		{name: "negative rate", yaml: "rest:\n  submitRateLimit:\n    users:\n      x: {perSecond: -1}\n", wantErr: "rest.submitRateLimit.users.x"},
		{name: "negative timeout", yaml: "rest:\n  writeTimeout: -1s\n", wantErr: "rest.writeTimeout"},
		{name: "GPU pods governed: off by default", yaml: "", check: func(t *testing.T, c Config) {
			if g := c.GovernGPUs(); g.Enabled || c.Webhook.GovernGPUs.TaintNodes {
				t.Errorf("governGPUs %+v taintNodes %v, want off", g, c.Webhook.GovernGPUs.TaintNodes)
			}
		}},
		{name: "GPU pods governed: the server's namespaces are exempt", yaml: "webhook:\n  governGPUs: {enabled: true, action: refuse, exemptNamespaces: [gpu-operator]}\n" +
			"scheduler: {gpuReservationNamespace: gpu-reservations}\n",
			check: func(t *testing.T, c Config) {
				g := c.GovernGPUs()
				if !g.Enabled || g.Action != "refuse" || strings.Join(g.ExemptNamespaces, ",") != "gpu-operator,sluice-system,gpu-reservations" {
					t.Errorf("governGPUs %+v", g)
				}
			}},
		{name: "GPU pods governed: default exemptions", yaml: "webhook:\n  governGPUs: {enabled: true}\n", check: func(t *testing.T, c Config) {
			if g := c.GovernGPUs(); strings.Join(g.ExemptNamespaces, ",") != "kube-system,kube-public,kube-node-lease,sluice-system" {
				t.Errorf("exempt %v", g.ExemptNamespaces)
			}
		}},
		{name: "GPU pods governed: bad action", yaml: "webhook:\n  governGPUs: {enabled: true, action: ignore}\n", wantErr: "webhook.governGPUs.action"},
		{name: "GPU pods governed without the webhook", yaml: "webhook:\n  enabled: false\n  governGPUs: {enabled: true}\n", wantErr: "needs webhook.enabled"},
		{name: "unknown field names its line", yaml: "listen: :6820\nlisten_addr: x\n", wantErr: "line 2"},
		{name: "nested unknown field", yaml: "log:\n  level: info\n  colour: true\n", wantErr: "line 3"},
		{name: "bad duration names its line", yaml: "shutdownTimeout: soon\n", wantErr: "line 1"},
		{name: "bad log level", yaml: "log:\n  level: loud\n", wantErr: "log.level"},
		{name: "lease ordering", yaml: "leaderElection:\n  renewDeadline: 20s\n", wantErr: "leaseDuration"},
		{name: "maxArraySize past Slurm's ceiling", yaml: "rest:\n  maxArraySize: 4000002\n", wantErr: "rest.maxArraySize"},
		{name: "privateData of a kind Sluice cannot keep private", yaml: "rest:\n  privateData: [jobs, nodes]\n", wantErr: `rest.privateData "nodes"`},
		{name: "privateData jobs", yaml: "rest:\n  privateData: [jobs]\n", check: func(t *testing.T, c Config) {
			if len(c.REST.PrivateData) != 1 || c.REST.PrivateData[0] != "jobs" {
				t.Errorf("privateData = %v", c.REST.PrivateData)
			}
		}},
		{name: "maxJobId past the int32 of Slurm's job_id", yaml: "rest:\n  maxJobId: 2147483648\n", wantErr: "rest.maxJobId"},
		{name: "maxJobId", yaml: "rest:\n  maxJobId: 67043328\n", check: func(t *testing.T, c Config) {
			if c.REST.MaxJobID != 67043328 {
				t.Errorf("maxJobId = %d", c.REST.MaxJobID)
			}
		}},
		{name: "maxArraySize", yaml: "rest:\n  maxArraySize: 5000\n", check: func(t *testing.T, c Config) {
			if c.REST.MaxArraySize != 5000 {
				t.Errorf("maxArraySize = %d", c.REST.MaxArraySize)
			}
		}},
		{name: "lease ordering ignored when disabled", yaml: "leaderElection:\n  enabled: false\n  renewDeadline: 20s\n"},
		{name: "unmapped Slurm users refused by default", yaml: "slurm:\n  users: {alice: {uid: 1001, gid: 1001}}\n",
			check: func(t *testing.T, c Config) {
				m := c.Slurm.inlineUserMap()
				if _, err := m.Lookup(context.Background(), "bob"); !errors.Is(err, kube.ErrUnknownUser) {
					t.Errorf("a fresh install runs an unmapped user: %v", err)
				}
				if ids, err := m.Lookup(context.Background(), "alice"); err != nil || ids.UID != 1001 {
					t.Errorf("alice runs as %+v, %v; want 1001", ids, err)
				}
			}},
		{name: "unmapped Slurm users run as nobody where the site says so", yaml: "slurm:\n  unmappedUsers: run\n",
			check: func(t *testing.T, c Config) {
				if ids, err := c.Slurm.inlineUserMap().Lookup(context.Background(), "bob"); err != nil || ids.UID != 65534 || ids.GID != 65534 {
					t.Errorf("an unmapped user runs as %+v, %v; want 65534:65534", ids, err)
				}
			}},
		{name: "a user's groups and home", yaml: "slurm:\n  users: {alice: {uid: 1001, gid: 1001, groups: [2000], home: /home/alice}}\n",
			check: func(t *testing.T, c Config) {
				ids, err := c.Slurm.inlineUserMap().Lookup(context.Background(), "alice")
				if err != nil || !slices.Equal(ids.Groups, []int64{1001, 2000}) || ids.Home != "/home/alice" {
					t.Errorf("alice runs as %+v, %v; want groups 1001, 2000 and home /home/alice", ids, err)
				}
			}},
		{name: "relative home", yaml: "slurm:\n  users: {alice: {uid: 1001, gid: 1001, home: alice}}\n", wantErr: `home "alice": want an absolute path`},
		{name: "relative passwd file", yaml: "slurm:\n  identity: {passwdFile: passwd}\n", wantErr: "slurm: identity.passwdFile"},
		{name: "group file alone", yaml: "slurm:\n  identity: {groupFile: /etc/sluice/group}\n", wantErr: "identity.groupFile needs identity.passwdFile"},
		{name: "LDAP url", yaml: "slurm:\n  identity:\n    ldap: {url: ldap.example.org, userBase: dc=example}\n", wantErr: "identity.ldap: url"},
		{name: "LDAP unknown field names its line", yaml: "slurm:\n  identity:\n    ldap:\n      url: ldaps://ldap.example.org\n      baseDN: dc=x\n", wantErr: "line 5"},
		{name: "LDAP", yaml: "slurm:\n  identity:\n    ldap: {url: ldaps://ldap.example.org, userBase: ou=people, cacheTTL: 1m, timeout: 2s}\n",
			check: func(t *testing.T, c Config) {
				o := c.Slurm.Identity.LDAP.options()
				if o.URL != "ldaps://ldap.example.org" || o.UserBase != "ou=people" || o.CacheTTL != time.Minute || o.Timeout != 2*time.Second {
					t.Errorf("LDAP options %+v", o)
				}
			}},
		{name: "bad unmappedUsers", yaml: "slurm:\n  unmappedUsers: allow\n", wantErr: `slurm: unmapped users "allow"`},
		{name: "root default user", yaml: "slurm:\n  defaultUser: {uid: 0, gid: 0}\n", wantErr: "want a non-root uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sluice.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

// TestLedgerDSNFile: the ledger's DSN can come from a file (a mounted
// Secret) instead of the config file, but not from both.
func TestLedgerDSNFile(t *testing.T) {
	const dsn = "postgres://sluice:pw@db:5432/sluice?sslmode=require"
	tests := []struct {
		name    string
		file    *string // content of the DSN file; nil: no file at that path
		inline  string  // accounting.dsn beside dsnFile
		wantDSN string
		wantErr string
	}{
		{name: "file content becomes the DSN, trailing newline dropped", file: new(dsn + "\n"), wantDSN: dsn},
		{name: "both dsn and dsnFile", file: new(dsn), inline: "postgres://other", wantErr: "set dsn or dsnFile, not both"},
		{name: "missing file", wantErr: "accounting.dsnFile: open"},
		{name: "empty file", file: new(" \n"), wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dsnPath := filepath.Join(dir, "dsn")
			if tt.file != nil {
				if err := os.WriteFile(dsnPath, []byte(*tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			yaml := "accounting:\n  dsnFile: " + dsnPath + "\n"
			if tt.inline != "" {
				yaml += "  dsn: " + tt.inline + "\n"
			}
			path := filepath.Join(dir, "sluice.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Accounting.DSN != tt.wantDSN {
				t.Errorf("DSN %q, want %q", c.Accounting.DSN, tt.wantDSN)
			}
			// cmd/sluice/server.go validates again after its flag overrides: the DSN
			// read from the file is not a conflict then.
			if err := c.Validate(); err != nil {
				t.Errorf("Validate after loading: %v", err)
			}
		})
	}
}

// TestWebhookCertDir: the webhook reads its certificates from
// webhook.certDir (the chart's Secret) when set, else from stateDir/webhook,
// following a stateDir changed after loading (the --state-dir flag).
func TestWebhookCertDir(t *testing.T) {
	tests := []struct {
		name, yaml, stateDirFlag, want string
	}{
		{name: "default under the state directory", yaml: "stateDir: /var/lib/sluice\n", want: "/var/lib/sluice/webhook"},
		{name: "follows --state-dir", yaml: "stateDir: /var/lib/sluice\n", stateDirFlag: "/srv/sluice", want: "/srv/sluice/webhook"},
		{name: "certDir wins", yaml: "stateDir: /var/lib/sluice\nwebhook:\n  certDir: /etc/sluice/webhook\n", want: "/etc/sluice/webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sluice.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.stateDirFlag != "" { // as cmd/sluice/server.go's --state-dir
				c.StateDir = tt.stateDirFlag
			}
			if got := c.WebhookCertDir(); got != tt.want {
				t.Errorf("WebhookCertDir() = %q, want %q", got, tt.want)
			}
		})
	}
}
