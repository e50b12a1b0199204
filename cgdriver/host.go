package cgdriver

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	cgroupfs "github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
)

// Mountpoint is where the cgroup hierarchies are mounted.
const Mountpoint = "/sys/fs/cgroup"

// Unified reports whether the host runs cgroup v2 only.
func Unified() bool { return cgroups.IsCgroup2UnifiedMode() }

// OOMKills is the number of processes the kernel's OOM killer killed in a
// container's cgroup, from libcontainer's cgroup paths: the v1 memory
// controller's memory.oom_control, or cgroup v2's memory.events (key "").
func OOMKills(paths map[string]string) (uint64, error) {
	if p, ok := paths["memory"]; ok && p != "" {
		return cgroupfs.OOMKillCount(p)
	}
	if p, ok := paths[""]; ok && p != "" {
		return fs2.OOMKillCount(p)
	}
	return 0, errors.New("no memory cgroup")
}

// SwapAvailable reports whether memory cgroups account and limit swap,
// probed once.
var SwapAvailable = sync.OnceValue(func() bool {
	self, _ := unifiedSelf()
	return swapProbe(Mountpoint, Unified(), self)
})

// swapProbe: v1 needs memory.memsw.*, v2 memory.swap.max. That file is in
// every v2 cgroup with the memory controller but the root, so a daemon in
// the root cgroup (no systemd, or a container's init) looks in the cgroups
// below it.
func swapProbe(mountpoint string, unified bool, self string) bool {
	if !unified {
		_, err := os.Stat(filepath.Join(mountpoint, "memory", "memory.memsw.limit_in_bytes"))
		return err == nil
	}
	if self != "" && self != "/" {
		_, err := os.Stat(filepath.Join(mountpoint, self, "memory.swap.max"))
		return err == nil
	}
	if !hasController(mountpoint, "memory") {
		return false
	}
	entries, err := os.ReadDir(mountpoint)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(mountpoint, e.Name(), "memory.swap.max")); err == nil {
			return true
		}
	}
	return false
}

// HugetlbPresent reports whether the hugetlb controller is there.
var HugetlbPresent = sync.OnceValue(func() bool {
	if Unified() {
		return hasController(Mountpoint, "hugetlb")
	}
	_, err := os.ReadDir(filepath.Join(Mountpoint, "hugetlb"))
	return err == nil
})

func hasController(dir, name string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(b)), name)
}

// unifiedSelf returns this process's cgroup v2 path ("0::<path>").
func unifiedSelf() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if p, ok := strings.CutPrefix(s.Text(), "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}
