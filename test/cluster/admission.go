package cluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// webhookClientName is the CommonName of the certificate the API server presents to
// admission webhooks.
const webhookClientName = "kube-apiserver-webhook-client"

// writeWebhookClientAuth gives the API server a client certificate for admission
// webhooks, as a site does through its admission configuration: a CA of its own
// (f.WebhookClientCACert, what a webhook trusts), one certificate from it in a kubeconfig
// whose user "*" applies to every webhook, and the AdmissionConfiguration
// (f.AdmissionConfig) pointing both webhook admission plugins at that kubeconfig.
func writeWebhookClientAuth(f pkiFiles, kubeconfigPath string) error {
	ca, err := newAuthority("sluice-rig-webhook-client-ca")
	if err != nil {
		return err
	}
	cert, err := ca.issue(webhookClientName, nil, nil)
	if err != nil {
		return fmt.Errorf("webhook client certificate: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["*"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert.CertPEM, ClientKeyData: cert.KeyPEM}
	if err := clientcmd.WriteToFile(*cfg, kubeconfigPath); err != nil {
		return err
	}
	plugin := func(name string) string {
		return fmt.Sprintf(`- name: %s
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %q
`, name, kubeconfigPath)
	}
	admission := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
		plugin("MutatingAdmissionWebhook") + plugin("ValidatingAdmissionWebhook")
	if err := os.WriteFile(f.AdmissionConfig, []byte(admission), 0o600); err != nil {
		return err
	}
	return os.WriteFile(f.WebhookClientCACert, ca.certPEM, 0o600)
}
