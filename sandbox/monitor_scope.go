package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
)

// Monitors leave the daemon's service under systemd: a monitor started by
// a daemon that runs as a systemd service is moved into a transient scope
// of its own, minicri-monitor-<pod id>.scope in system.slice (CRI-O does
// the same with conmon), so that stopping, restarting or a crash of the
// service kills none of them, whatever its KillMode. The scope goes away
// with its monitor. Elsewhere (no systemd, or minicri not a service)
// monitors stay where they are: a session of their own already outlives
// the daemon.

// monitorScopePrefix names the monitors' scopes.
const monitorScopePrefix = "minicri-monitor"

// placeMonitor moves the monitor pid of pod podID out of the daemon's
// service, when there is one.
func placeMonitor(podID string, pid int) error {
	if !inSystemdService() {
		return nil
	}
	mgr, err := cgmanager.New(&cgroups.Cgroup{
		Systemd: true, Parent: "system.slice", ScopePrefix: monitorScopePrefix, Name: podID,
		Resources: &cgroups.Resources{SkipDevices: true},
	})
	if err != nil {
		return fmt.Errorf("monitor scope of pod %s: %w", podID, err)
	}
	if err := mgr.Apply(pid); err != nil {
		return fmt.Errorf("move monitor %d of pod %s to %s-%s.scope: %w", pid, podID, monitorScopePrefix, podID, err)
	}
	return nil
}

// inSystemdService reports whether systemd runs the host and this process
// is in a service's cgroup.
func inSystemdService() bool {
	if !systemd.IsRunningSystemd() {
		return false
	}
	f, err := os.Open("/proc/self/cgroup")
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
