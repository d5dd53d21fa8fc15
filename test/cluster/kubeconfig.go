package cluster

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName is the cluster, user and context name in every kubeconfig the
// rig writes.
const contextName = "sluice-rig"

// writeKubeconfig writes a self-contained kubeconfig (certificates inline) for
// one client identity, so it works from any directory and any machine user.
func writeKubeconfig(path, server string, caPEM []byte, cred credential) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: cred.CertPEM, ClientKeyData: cred.KeyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, path)
}
