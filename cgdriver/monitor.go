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
// systemd unit (a service, or a scope such as a login session's), when the
// daemon runs in one (whatever the cgroup driver):
// into a transient scope minicri-monitor-<pod>.scope in system.slice (CRI-O
// does the same with conmon), so that stopping, restarting or losing the
// unit, whatever its KillMode, leaves the pod's monitor (and so its pause,
// its containers and their logs) running. systemd removes the scope once the
// monitor is gone. Elsewhere (no systemd, or in no unit) it does nothing: a
// session of its own already outlives the daemon.
func PlaceMonitor(podID string, pid int) error {
	if !systemd.IsRunningSystemd() || !inSystemdUnit(pid) {
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

// inSystemdUnit reports whether pid is in a systemd service's or scope's
// cgroup (the monitor checks itself before it leaves the daemon's cgroup).
func inSystemdUnit(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	defer f.Close()
	return inUnit(f)
}

// inUnit reads /proc/<pid>/cgroup: "0::/system.slice/minicri.service"
// (v2) or "1:name=systemd:/system.slice/minicri.service" (v1), or a scope.
func inUnit(r io.Reader) bool {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "0::") || strings.Contains(line, ":name=systemd:") {
			return strings.HasSuffix(line, ".service") || strings.HasSuffix(line, ".scope")
		}
	}
	return false
}
