package main

import (
	"os"
	"runtime"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/minicri/minicri/internal/pidns"
	// Device cgroup rules need the devices controller registered.
	_ "github.com/opencontainers/cgroups/devices"
	// nsexec runs (in C, before the Go runtime) when a container init starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// libcontainer re-executes this binary as "minicri init" for every container
// process; that must be handed over before anything else runs.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		runtime.GOMAXPROCS(1)
		runtime.LockOSThread()
		libcontainer.Init()
	}
	// Restore's pid reservation (internal/pidns) runs this binary in a pod's PID namespace.
	if len(os.Args) > 1 && os.Args[1] == pidns.Arg {
		os.Exit(pidns.Main(os.Args[2:]))
	}
}
