package main

import (
	"os"

	"github.com/minicri/minicri/internal/pidns"
	"github.com/minicri/minicri/internal/seccompbpf"
	// libcontainer re-executes this binary as "<binary> init" for every
	// container process; lcinit hands such a process over before main runs.
	_ "github.com/minicri/minicri/internal/lcinit"
)

// Restore's pid reservation (internal/pidns) runs this binary in a pod's PID
// namespace; its seccomp check (internal/seccompbpf) runs it to install a
// request's filter.
func init() {
	if len(os.Args) > 1 && os.Args[1] == pidns.Arg {
		os.Exit(pidns.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == seccompbpf.Arg {
		os.Exit(seccompbpf.Main())
	}
}
