package monitor

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/systemd"

	"github.com/minicri/minicri/cgdriver"
)

// followMonitor moves this helper where cgdriver.PlaceMonitor put the
// monitor (a scope of its own under systemd), so that the pause it starts
// next begins there too rather than in the daemon's unit: placePause moves
// the pause into the pod's cgroup, which on a v1 or hybrid host sets its
// controllers but not the name=systemd hierarchy that makes unit membership.
func followMonitor(mon int) error {
	if !systemd.IsRunningSystemd() {
		return nil
	}
	paths, err := cgroups.ParseCgroupFile(fmt.Sprintf("/proc/%d/cgroup", mon))
	if err != nil {
		return err
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return cgroups.WriteCgroupProc(filepath.Join(cgdriver.Mountpoint, paths[""]), os.Getpid())
	}
	for _, sub := range []string{"name=systemd", ""} { // "": the unified hierarchy of a hybrid host
		p, ok := paths[sub]
		if !ok {
			continue
		}
		mnt, err := cgroups.FindCgroupMountpoint("", sub)
		if err != nil {
			return err
		}
		if err := cgroups.WriteCgroupProc(filepath.Join(mnt, p), os.Getpid()); err != nil {
			return err
		}
	}
	return nil
}
