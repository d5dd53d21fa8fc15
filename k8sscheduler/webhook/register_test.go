package webhook

import (
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestRegistrationConfiguration(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\n")
	svc := &admissionregistrationv1.ServiceReference{Namespace: "sluice-system", Name: "sluice-webhook"}
	tests := []struct {
		name    string
		reg     Registration
		wantErr string
		check   func(t *testing.T, wh admissionregistrationv1.MutatingWebhook)
	}{
		{name: "loopback URL, defaults", reg: Registration{URL: "https://127.0.0.1:9443/mutate-pods", CABundle: ca},
			check: func(t *testing.T, wh admissionregistrationv1.MutatingWebhook) {
				if *wh.ClientConfig.URL != "https://127.0.0.1:9443/mutate-pods" || wh.ClientConfig.Service != nil {
					t.Errorf("client config %+v", wh.ClientConfig)
				}
				if *wh.FailurePolicy != admissionregistrationv1.Fail || *wh.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun || *wh.TimeoutSeconds != 10 {
					t.Errorf("failurePolicy %s sideEffects %s timeout %d", *wh.FailurePolicy, *wh.SideEffects, *wh.TimeoutSeconds)
				}
				if got := wh.MatchConditions[0].Expression; got != "has(object.spec.schedulerName) && object.spec.schedulerName in ['sluice']" {
					t.Errorf("match condition %q", got)
				}
				if ops := wh.Rules[0].Operations; len(ops) != 1 || ops[0] != admissionregistrationv1.Create || wh.Rules[0].Resources[0] != "pods" {
					t.Errorf("rules %+v, want pod creation only", wh.Rules)
				}
			}},
		{name: "service, KAI name too", reg: Registration{Service: svc, CABundle: ca, SchedulerNames: []string{"sluice", "kai-scheduler"}, TimeoutSeconds: 5},
			check: func(t *testing.T, wh admissionregistrationv1.MutatingWebhook) {
				s := wh.ClientConfig.Service
				if s == nil || s.Name != "sluice-webhook" || *s.Path != MutatePath || svc.Path != nil {
					t.Errorf("service %+v, want the path defaulted on a copy", s)
				}
				if !strings.HasSuffix(wh.MatchConditions[0].Expression, "in ['sluice', 'kai-scheduler']") || *wh.TimeoutSeconds != 5 {
					t.Errorf("match condition %q timeout %d", wh.MatchConditions[0].Expression, *wh.TimeoutSeconds)
				}
			}},
		{name: "no CA", reg: Registration{URL: "https://127.0.0.1:1/"}, wantErr: "CABundle is required"},
		{name: "neither URL nor service", reg: Registration{CABundle: ca}, wantErr: "exactly one of URL and Service"},
		{name: "both URL and service", reg: Registration{CABundle: ca, URL: "https://x/", Service: svc}, wantErr: "exactly one of URL and Service"},
		{name: "plain http", reg: Registration{CABundle: ca, URL: "http://127.0.0.1:1/"}, wantErr: "must be https://"},
		{name: "scheduler name with a quote", reg: Registration{CABundle: ca, URL: "https://x/", SchedulerNames: []string{"a']||true||['"}}, wantErr: "scheduler name"},
		{name: "timeout too long", reg: Registration{CABundle: ca, URL: "https://x/", TimeoutSeconds: 31}, wantErr: "not within 1 to 30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.reg.configuration()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Name != DefaultConfigurationName || len(cfg.Webhooks) != 1 || cfg.Webhooks[0].Name != WebhookName {
				t.Fatalf("configuration %s with %d webhooks", cfg.Name, len(cfg.Webhooks))
			}
			tt.check(t, cfg.Webhooks[0])
		})
	}
}

func TestConfigErrors(t *testing.T) {
	restConfig := &rest.Config{Host: "https://127.0.0.1:1"}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no cert dir", cfg: Config{Client: client, RESTConfig: restConfig}, wantErr: "CertDir is required"},
		{name: "no client", cfg: Config{CertDir: dir, RESTConfig: restConfig}, wantErr: "Client is required"},
		{name: "no REST config", cfg: Config{CertDir: dir, Client: client}, wantErr: "RESTConfig is required"},
		{name: "Secret without a namespace", cfg: Config{CertDir: dir, Client: client, RESTConfig: restConfig, CertSecret: types.NamespacedName{Name: "certs"}},
			wantErr: "needs both a namespace and a name"},
		{name: "address without port", cfg: Config{CertDir: dir, Client: client, RESTConfig: restConfig, Addr: "127.0.0.1"}, wantErr: `Addr "127.0.0.1"`},
		{name: "empty scheduler name", cfg: Config{CertDir: dir, Client: client, RESTConfig: restConfig, SchedulerNames: []string{"sluice", ""}}, wantErr: `scheduler name ""`},
		{name: "address that cannot be listened on", cfg: Config{CertDir: dir, Client: client, RESTConfig: restConfig, Addr: "256.0.0.1:0"}, wantErr: "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := New(tt.cfg)
			if err == nil {
				srv.reserved.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

// The serving certificate holds DNS names only: IP hosts are dropped with a warning,
// and the URL the API server calls names the first host and the port New took.
func TestHostsAndURL(t *testing.T) {
	restConfig := &rest.Config{Host: "https://127.0.0.1:1"}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	tests := []struct {
		hosts    []string
		want     []string
		wantWarn bool
	}{
		{hosts: nil, want: []string{"localhost"}},
		{hosts: []string{"127.0.0.1", "localhost"}, want: []string{"localhost"}, wantWarn: true},
		{hosts: []string{"::1"}, want: []string{"localhost"}, wantWarn: true},
		{hosts: []string{"sluice-webhook.ns.svc", "10.0.0.5", "sluice-webhook"}, want: []string{"sluice-webhook.ns.svc", "sluice-webhook"}, wantWarn: true},
	}
	for _, tt := range tests {
		log.Reset()
		srv, err := New(Config{Addr: "127.0.0.1:0", CertDir: t.TempDir(), Client: client, RESTConfig: restConfig, Hosts: tt.hosts,
			Log: logr.FromSlogHandler(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv.reserved.Close()
		if !slices.Equal(srv.cfg.Hosts, tt.want) {
			t.Errorf("hosts %q: certificate names %q, want %q", tt.hosts, srv.cfg.Hosts, tt.want)
		}
		if warned := strings.Contains(log.String(), "not in the serving certificate"); warned != tt.wantWarn {
			t.Errorf("hosts %q: warned %v, want %v (%s)", tt.hosts, warned, tt.wantWarn, log.String())
		}
		_, port, _ := net.SplitHostPort(srv.Addr())
		if want := "https://" + net.JoinHostPort(tt.want[0], port) + MutatePath; srv.URL() != want || port == "0" {
			t.Errorf("hosts %q: URL %s, want %s", tt.hosts, srv.URL(), want)
		}
	}
}
