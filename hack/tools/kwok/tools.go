//go:build tools

// Package kwok pins kwok, which simulates the rig's GPU nodes and pod lifecycles.
// hack/tools builds it into ./bin.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
