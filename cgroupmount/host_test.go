package cgroupmount

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func owner(t *testing.T, p string) (int, int) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// TestDelegate chowns the directory and the files the kernel lists, and
// nothing else (a fake cgroup in a temporary directory).
func TestDelegate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "pod", "ctr")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cgroup.procs", "cgroup.subtree_control", "memory.reclaim", "memory.max"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list := filepath.Join(root, "delegate")
	if err := os.WriteFile(list, []byte("cgroup.procs\ncgroup.threads\ncgroup.subtree_control\nmemory.reclaim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oldRoot, oldList := hostRoot, delegateFile
	hostRoot, delegateFile = root, list
	t.Cleanup(func() { hostRoot, delegateFile = oldRoot, oldList })

	if err := Delegate(dir, 100000, 100001); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control"), filepath.Join(dir, "memory.reclaim")} {
		if u, g := owner(t, p); u != 100000 || g != 100001 {
			t.Errorf("%s owned by %d:%d, want 100000:100001", p, u, g)
		}
	}
	for _, p := range []string{filepath.Join(dir, "memory.max"), filepath.Join(root, "pod")} {
		if u, g := owner(t, p); u != 0 || g != 0 {
			t.Errorf("%s owned by %d:%d, want root's", p, u, g)
		}
	}
	if err := Delegate(root, 1, 1); err == nil {
		t.Error("Delegate of the root itself succeeded")
	}
	if err := Delegate("/etc", 1, 1); err == nil {
		t.Error("Delegate outside the cgroup root succeeded")
	}
	if err := os.WriteFile(list, []byte("../escape\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Delegate(dir, 1, 1); err == nil {
		t.Error("Delegate took a delegate list naming another directory")
	}
}
