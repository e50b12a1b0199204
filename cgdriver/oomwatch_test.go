package cgdriver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
)

// fakeCgroup is a parent and a child directory holding the two files the
// watch reads, as plain files (inotify treats them alike).
func fakeCgroup(t *testing.T) (parent, child string) {
	t.Helper()
	cgroups.TestMode = true // plain files stand for cgroupfs ones
	parent = t.TempDir()
	child = filepath.Join(parent, "minicri-x.scope")
	if err := os.Mkdir(child, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(parent, "memory.events"), "oom 0\noom_kill 2\n")
	writeFile(t, filepath.Join(child, "memory.events"), "oom 0\noom_kill 0\n")
	writeFile(t, filepath.Join(child, "cgroup.events"), "populated 1\nfrozen 0\n")
	return parent, child
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceQuietly changes what path reads without a change notification on
// the watched inode (a second link keeps it alive): the kernel's delayed
// memory.events notification, not yet sent when the cgroup empties.
func replaceQuietly(t *testing.T, path, content string) {
	t.Helper()
	if err := os.Link(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path+".new", content)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// The kill is counted but its notification is late; "populated 0" comes
// first. libcontainer's watch ends there and reports no OOM.
func TestOOMWatchReadsTheCountWhenTheCgroupEmpties(t *testing.T) {
	_, child := fakeCgroup(t)
	w, err := WatchOOM(child)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	replaceQuietly(t, filepath.Join(child, "memory.events"), "oom 1\noom_kill 1\n")
	writeFile(t, filepath.Join(child, "cgroup.events"), "populated 0\nfrozen 0\n")
	if !w.Killed(5*time.Second, false) {
		t.Fatal("an OOM kill counted before the cgroup emptied was not reported")
	}
}

func TestOOMWatchNoKill(t *testing.T) {
	parent, child := fakeCgroup(t)
	w, err := WatchOOM(child)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, filepath.Join(child, "cgroup.events"), "populated 0\nfrozen 0\n")
	if w.Killed(5*time.Second, true) {
		t.Fatal("a plain exit read as an OOM kill")
	}
	select {
	case <-w.done:
	default:
		t.Fatal("the watch did not end when the cgroup emptied")
	}
	// Another cgroup under the same parent is OOM-killed later: not this one's
	// unless this one was SIGKILLed.
	writeFile(t, filepath.Join(parent, "memory.events"), "oom 1\noom_kill 3\n")
	if w.Killed(0, false) {
		t.Fatal("the parent's count made a non-SIGKILL exit an OOM kill")
	}
}

// The cgroup went (systemd removed the scope) before anything was read:
// a SIGKILLed exit with a rise of the parent's hierarchical count is the kill.
func TestOOMWatchFallsBackToTheParentCount(t *testing.T) {
	parent, child := fakeCgroup(t)
	w, err := WatchOOM(child)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	replaceQuietly(t, filepath.Join(parent, "memory.events"), "oom 1\noom_kill 3\n")
	if err := os.RemoveAll(child); err != nil {
		t.Fatal(err)
	}
	if !w.Killed(5*time.Second, true) {
		t.Fatal("a SIGKILL with the parent's count risen was not reported")
	}
}
