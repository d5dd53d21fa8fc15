//go:build tools

// Package coredns pins CoreDNS, the cluster DNS of the rig's real nodes
// (<pod>.<service>.<namespace>.svc names for job pods). It is never compiled
// into Sluice; hack/tools builds it into ./bin.
package coredns

import _ "github.com/coredns/coredns"
