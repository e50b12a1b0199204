// Command minicri-monitor-helper is the short-lived half of a pod's monitor:
// minicri-monitor (C, long-lived) runs it once per request that creates
// processes or resolves paths (the pause, a container's create through
// libcontainer or a runtime binary, start, delete, a log reopen). It is a
// binary of its own, not a minicri subcommand, because it starts several
// times per pod: without the daemon's packages (gRPC, the Kubernetes API
// types, OpenTelemetry) it starts in a third of the time.
package main

import (
	"os"

	"github.com/minicri/minicri/monitor"
)

func main() {
	os.Exit(monitor.HelperMain(os.Args[1:]))
}
