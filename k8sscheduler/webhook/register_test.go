package webhook

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no state dir", cfg: Config{Client: client}, wantErr: "StateDir is required"},
		{name: "no client", cfg: Config{StateDir: dir}, wantErr: "Client is required"},
		{name: "address without port", cfg: Config{StateDir: dir, Client: client, Addr: "127.0.0.1"}, wantErr: `Addr "127.0.0.1"`},
		{name: "empty scheduler name", cfg: Config{StateDir: dir, Client: client, SchedulerNames: []string{"sluice", ""}}, wantErr: `scheduler name ""`},
		{name: "address that cannot be listened on", cfg: Config{StateDir: dir, Client: client, Addr: "256.0.0.1:0"}, wantErr: "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := New(tt.cfg)
			if err == nil {
				srv.listener.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
