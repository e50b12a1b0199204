// Package lcinit hands a process over to libcontainer when it was
// re-executed as a container's init ("<binary> init"): libcontainer starts
// every container process that way from the binary that created it (minicri
// for execs, minicri-monitor-helper for a container's init). Import it for
// its side effect, from main packages only.
package lcinit

import (
	"os"
	"runtime"

	"github.com/opencontainers/runc/libcontainer"
	// Device cgroup rules need the devices controller registered.
	_ "github.com/opencontainers/cgroups/devices"
	// nsexec runs (in C, before the Go runtime) when a container init starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		runtime.GOMAXPROCS(1)
		runtime.LockOSThread()
		libcontainer.Init()
	}
}
