package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// What the host shows of the instance: mounts, processes, cgroups, links.

// mountsUnder lists mount points under dir, deepest first.
func mountsUnder(dir string) []string { return mountsIn("/proc/self/mountinfo", dir) }

// mountsIn lists the mount points under dir of a mount table (a
// mountinfo file of /proc), deepest first.
func mountsIn(table, dir string) []string {
	f, err := os.Open(table)
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

// processesMentioning lists live processes (but this one and skip) whose
// command line or environment holds s (a CNI plugin's names its pod).
func processesMentioning(s string, skip int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() || pid == skip {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && (strings.Contains(string(b), s) || strings.Contains(string(env), s)) && alive(pid) {
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
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// makeCgroup creates the cgroup path in every mounted hierarchy (v1 and
// the hybrid unified one); a new cpuset gets its parent's cpus and mems.
func makeCgroup(path string) error {
	for _, r := range cgroupRoots {
		root := filepath.Join("/sys/fs/cgroup", r)
		var st unix.Statfs_t
		if unix.Statfs(root, &st) != nil || (st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC) {
			continue
		}
		d := filepath.Join(root, path)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(root, f)); err == nil && r == "cpuset" {
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cgroupChildren lists the cgroups below dir.
func cgroupChildren(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// removeTree removes a cgroup directory and the ones below it, deepest first.
func removeTree(dir string) {
	killTree(dir)
	kids := cgroupChildren(dir)
	for i := len(kids) - 1; i >= 0; i-- {
		_ = os.Remove(kids[i])
	}
	_ = os.Remove(dir)
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

// startTime is field 22 of /proc/pid/stat ("" when there is no such process).
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// running reports whether the process r names is still alive.
func (r procRef) running() bool { return alive(r.pid) && startTime(r.pid) == r.start }

// killTree kills every process left in the cgroup dir and its children
// (the soak made it: whatever runs there is the instance's, already
// reported as a leak), and waits up to 2 s for them to be gone, so that
// the cgroups can be removed (2026-12-04: two pauses outlived a failed soak).
func killTree(dir string) {
	procs := func() []int {
		var pids []int
		for _, d := range append(cgroupChildren(dir), dir) {
			b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pids := procs()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}
