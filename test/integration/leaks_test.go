package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// mountsUnder lists mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append([]string{fields[4]}, out...)
		}
	}
	return out
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// processesMentioning lists live processes whose command line holds s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && alive(pid) {
			out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return out
}

// cgroupRoots are the v1 hierarchies, the hybrid unified one, and "" (the
// hierarchy itself on a cgroup v2 host).
var cgroupRoots = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd", "unified", ""}

// cgroupDirs lists the cgroup directories named by path in every hierarchy.
func cgroupDirs(path string) []string {
	var out []string
	for _, r := range cgroupRoots {
		d := filepath.Join("/sys/fs/cgroup", r, path)
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

func removeCgroupDirs(path string) {
	for _, d := range cgroupDirs(path) {
		os.Remove(d)
	}
}

// bridgePorts lists the interfaces enslaved to the bridge.
func bridgePorts(bridge string) []string {
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil
	}
	links, _ := netlink.LinkList()
	var out []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// leases lists host-local lease files that name the pod.
func (i *instance) leases(id string) []string {
	var out []string
	root := filepath.Join(i.dir, "root", "cni", "ipam")
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), id) {
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// assertNothingLeft checks that no trace of the pods remains: netns pins,
// veths, leases, mounts under the instance, processes, cgroups, files.
func (i *instance) assertNothingLeft(t *testing.T, pods map[string]podInfo) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		problems := i.leftovers(pods)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind:\n  %s", strings.Join(problems, "\n  "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (i *instance) leftovers(pods map[string]podInfo) []string {
	var problems []string
	for id, info := range pods {
		if alive(info.PID) {
			problems = append(problems, fmt.Sprintf("pause %d of %s still running", info.PID, id))
		}
		if alive(info.MonitorPID) {
			problems = append(problems, fmt.Sprintf("monitor %d of %s still running", info.MonitorPID, id))
		}
		if info.NetNS != "" {
			if _, err := os.Stat(info.NetNS); err == nil {
				problems = append(problems, "netns pin "+info.NetNS)
			}
		}
		for _, l := range i.leases(id) {
			problems = append(problems, "host-local lease "+l)
		}
		if info.Cgroup == "" {
			problems = append(problems, "test bug: no cgroup path for "+id)
		}
		for _, d := range cgroupDirs(info.Cgroup) {
			problems = append(problems, "cgroup "+d)
		}
		for _, p := range processesMentioning(id) {
			problems = append(problems, "process "+p)
		}
		for _, d := range []string{filepath.Join(i.dir, "root", "sandboxes", id), filepath.Join(i.dir, "state", "sandboxes", id)} {
			if _, err := os.Stat(d); err == nil {
				problems = append(problems, "directory "+d)
			}
		}
	}
	for _, m := range mountsUnder(i.dir) {
		if m != filepath.Join(i.dir, "state", "netns") {
			problems = append(problems, "mount "+m)
		}
	}
	if ports := bridgePorts(i.bridge); len(ports) > 0 {
		problems = append(problems, fmt.Sprintf("veths on %s: %v", i.bridge, ports))
	}
	return problems
}
