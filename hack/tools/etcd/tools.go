//go:build tools

// Package etcd pins the etcd server the rig runs. hack/tools builds it into ./bin.
package etcd

import _ "go.etcd.io/etcd/server/v3"
