//go:build tools

// Package tools pins containerd 2.4 and its runc shim, which `make bench` runs as its
// third runtime (hack/bench-tools.sh builds them; the version is also named there).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
