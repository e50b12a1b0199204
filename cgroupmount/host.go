package cgroupmount

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

const (
	// Root is where the host mounts its cgroups.
	Root = "/sys/fs/cgroup"

	optNSDelegate          = "nsdelegate"
	optMemoryRecursiveProt = "memory_recursiveprot"
)

// hostRoot is Root, where Delegate may chown; a variable for tests.
var hostRoot = Root

// delegateFile lists the files of a cgroup its delegatee must own (Linux
// >= 4.15); a variable for tests.
var delegateFile = "/sys/kernel/cgroup/delegate"

// Probe reads what the host offers: whether Root is cgroup v2, and the
// options of its mount a container's mount must keep.
func Probe() Host {
	var st unix.Statfs_t
	if err := unix.Statfs(Root, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return Host{}
	}
	return Host{Unified: true, Options: HostOptions()}
}

// HostOptions are the options of the host's mount at Root that a mount in
// the host's cgroup namespace must keep (nsdelegate, memory_recursiveprot);
// none when mountinfo cannot be read.
func HostOptions() []string {
	info, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(Root))
	if err != nil || len(info) == 0 {
		return nil
	}
	var out []string
	// The last entry is the top of a stack of mounts on Root.
	for _, opt := range strings.Split(info[len(info)-1].VFSOptions, ",") {
		if opt == optNSDelegate || opt == optMemoryRecursiveProt {
			out = append(out, opt)
		}
	}
	return out
}

// Delegate hands the cgroup directory dir (on the host) to uid and gid,
// as systemd delegates a cgroup to a user: the directory, so that they may
// create child cgroups in it, and the files the kernel lists as
// delegatable (cgroup.procs, cgroup.subtree_control, cgroup.threads, ...),
// so that they may move processes and enable controllers. Its other files
// (memory.max, ...) stay root's: with nsdelegate the container cannot raise
// its own limits. Links are never followed.
func Delegate(dir string, uid, gid int) error {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Clean(dir), hostRoot+"/") {
		return fmt.Errorf("delegate cgroup %q: not a cgroup under %s", dir, hostRoot)
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("delegate cgroup %s to %d:%d: %w", dir, uid, gid, err)
	}
	files, err := delegatable()
	if err != nil {
		return err
	}
	for _, f := range files {
		err := os.Lchown(filepath.Join(dir, f), uid, gid)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delegate cgroup %s to %d:%d: %w", dir, uid, gid, err)
		}
	}
	return nil
}

// delegatable are the files the kernel lists in delegateFile, else those
// cgroups(7) names.
func delegatable() ([]string, error) {
	f, err := os.Open(delegateFile)
	if errors.Is(err, os.ErrNotExist) {
		return []string{"cgroup.procs", "cgroup.subtree_control", "cgroup.threads"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", delegateFile, err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		if name == "" {
			continue
		}
		if strings.Contains(name, "/") || name == "." || name == ".." {
			return nil, fmt.Errorf("read %s: bad file name %q", delegateFile, name)
		}
		out = append(out, name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", delegateFile, err)
	}
	return out, nil
}
