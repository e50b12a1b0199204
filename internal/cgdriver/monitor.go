package cgdriver

import (
	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
)

// monitorSlice holds the monitors' scopes under systemd, next to the
// daemon's service rather than inside it.
const monitorSlice = "system.slice"

// PlaceMonitor moves the monitor process pid of a pod out of the daemon's
// cgroup when the pod's cgroup path is a systemd one: into a transient
// scope minicri-monitor-<pod>.scope in system.slice, so that stopping,
// restarting or losing the daemon's service leaves the pod's monitor (and
// so its pause, its containers and their logs) running. systemd removes the
// scope once the monitor is gone. Under cgroupfs it does nothing.
func PlaceMonitor(podCgroupPath, podID string, pid int) error {
	if !IsSystemd(podCgroupPath) {
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
