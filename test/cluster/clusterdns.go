package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The real nodes' cluster DNS is CoreDNS, built from its Go module like the rest of the
// rig (hack/tools/coredns), with its kubernetes plugin watching the rig's API server:
// `<pod>.<service>.<namespace>.svc.cluster.local` for pods behind a headless Service (a
// Slurm job's pods behind slurm-jobs) and `<service>.<namespace>.svc.cluster.local`.
// It listens on every real node's bridge address, and each node's kubelet gives its pods
// its own node's address as their nameserver, as node-local DNS does.

// startClusterDNS runs CoreDNS for nodes and returns once it has synced with the API
// server (its ready plugin answers).
func (c *Cluster) startClusterDNS(ctx context.Context, nodes []*realNode, readyPort int) error {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.ip())
	}
	bind := strings.Join(addrs, " ")
	// CoreDNS reads its client identity from the admin kubeconfig: it lists and watches
	// Services, EndpointSlices and Namespaces cluster-wide, which only the admin may in
	// a rig with no cluster add-ons' RBAC.
	corefile := fmt.Sprintf(`cluster.local:53 {
    bind %[1]s
    errors
    ready 127.0.0.1:%[2]d
    kubernetes cluster.local {
        kubeconfig %[3]q
        pods disabled
        ttl 5
    }
}
.:53 {
    bind %[1]s
    errors
    # The machine has no network: every other name is answered at once.
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, bind, readyPort, c.Kubeconfig)
	path := c.layout.path("coredns", "Corefile")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(corefile), 0o600); err != nil {
		return err
	}
	dns, err := c.run("coredns", filepath.Join(c.assets, "coredns"), []string{"-conf", path}, nil)
	if err != nil {
		return err
	}
	ready := "http://127.0.0.1:" + strconv.Itoa(readyPort) + "/ready"
	return c.waitFor(ctx, dns, "cluster DNS ready", func(ctx context.Context) error { return httpGetOK(ctx, httpPlain, ready) })
}
