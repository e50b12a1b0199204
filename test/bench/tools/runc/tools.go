//go:build tools

// Package tools pins the runc command that containerd 2.4 runs in `make bench`
// (hack/bench-tools.sh, RUNC_VERSION; built with the seccomp tag).
package tools

import _ "github.com/opencontainers/runc"
