//go:build tools

// Package staticcheck pins staticcheck, which make lint runs over the project.
// hack/tools builds it into ./bin.
package staticcheck

import _ "honnef.co/go/tools/cmd/staticcheck"
