package cgdriver

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
)

// monitorSlice holds the monitors' scopes under systemd, next to the
// daemon's service rather than inside it.
const monitorSlice = "system.slice"

// PlaceMonitor moves the monitor process pid of a pod out of the daemon's
// systemd service, when the daemon runs as one (whatever the cgroup driver):
// into a transient scope minicri-monitor-<pod>.scope in system.slice (CRI-O
// does the same with conmon), so that stopping, restarting or losing the
// service, whatever its KillMode, leaves the pod's monitor (and so its
// pause, its containers and their logs) running. systemd removes the scope
// once the monitor is gone. Elsewhere (no systemd, or not a service) it does
// nothing: a session of its own already outlives the daemon.
func PlaceMonitor(podID string, pid int) error {
	if !systemd.IsRunningSystemd() || !inSystemdService(pid) {
		return nil
	}
	mgr, err := cgmanager.New(&cgroups.Cgroup{
		Parent: monitorSlice, ScopePrefix: ScopePrefix + "-monitor", Name: podID, Systemd: true,
		Resources: &cgroups.Resources{SkipDevices: true},
	})
	if err != nil {
		return err
	}
	return mgr.Apply(pid)
}

// inSystemdService reports whether pid is in a systemd service's cgroup
// (the monitor checks itself before it leaves the daemon's cgroup).
func inSystemdService(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	defer f.Close()
	return inService(f)
}

// inService reads /proc/<pid>/cgroup: "0::/system.slice/minicri.service"
// (v2) or "1:name=systemd:/system.slice/minicri.service" (v1).
func inService(r io.Reader) bool {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "0::") || strings.Contains(line, ":name=systemd:") {
			return strings.HasSuffix(line, ".service")
		}
	}
	return false
}
