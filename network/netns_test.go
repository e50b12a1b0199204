package network

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// hostNetNSIno is the process's netns before any test ran.
var hostNetNSIno = func() uint64 {
	var st unix.Stat_t
	_ = unix.Stat("/proc/self/ns/net", &st)
	return st.Ino
}()

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return st.Ino
}

func TestNetNSLifecycle(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "netns")
	unmountDirOnCleanup(t, dir)

	ns, err := NewNetNS(dir, "pod1")
	if err != nil {
		t.Fatalf("NewNetNS: %v", err)
	}
	t.Cleanup(func() { _ = ns.Remove() })
	if ns.Path() != filepath.Join(dir, "pod1") {
		t.Fatalf("Path() = %q", ns.Path())
	}
	if !ns.Exists() {
		t.Fatal("Exists() = false after NewNetNS")
	}
	if mounted, shared, err := mountState(dir); err != nil || !mounted || !shared {
		t.Fatalf("netns dir: mounted=%v shared=%v err=%v; want a shared mount", mounted, shared, err)
	}
	if !pinMounted(t, ns.Path()) {
		t.Fatal("pin is not a mount point")
	}
	if nsInode(t, ns.Path()) == hostNetNSIno {
		t.Fatal("pinned netns is the host netns")
	}
	// Whatever thread created the netns (even the main thread, which Go
	// parks instead of ending) must be back in the host netns.
	if nsInode(t, "/proc/self/ns/net") != hostNetNSIno {
		t.Fatal("main thread left in a pod netns")
	}

	// A second pin on the same name must fail and leave the first intact.
	if _, err := NewNetNS(dir, "pod1"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("NewNetNS on existing pin: err = %v, want os.ErrExist", err)
	}
	if !ns.Exists() {
		t.Fatal("existing pin damaged by failed NewNetNS")
	}

	// Do runs inside the netns and restores the thread.
	hostIno := nsInode(t, "/proc/thread-self/ns/net")
	var inside uint64
	var links []string
	if err := ns.Do(func() error {
		var st unix.Stat_t
		if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
			return err
		}
		inside = st.Ino
		ls, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range ls {
			links = append(links, l.Attrs().Name)
		}
		return nil
	}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if inside != nsInode(t, ns.Path()) {
		t.Fatalf("Do ran in netns inode %d, want %d", inside, nsInode(t, ns.Path()))
	}
	if len(links) != 1 || links[0] != "lo" {
		t.Fatalf("links in new netns = %v, want [lo]", links)
	}
	if got := nsInode(t, "/proc/thread-self/ns/net"); got != hostIno {
		t.Fatalf("caller thread netns changed: %d != %d", got, hostIno)
	}
	wantErr := errors.New("boom")
	if err := ns.Do(func() error { return wantErr }); !errors.Is(err, wantErr) {
		t.Fatalf("Do error = %v, want %v", err, wantErr)
	}

	// A second NetNS in the same dir works (dir already shared).
	ns2, err := NewNetNS(dir, "pod2")
	if err != nil {
		t.Fatalf("NewNetNS pod2: %v", err)
	}
	if err := ns2.Remove(); err != nil {
		t.Fatalf("Remove pod2: %v", err)
	}

	if err := ns.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if pinMounted(t, ns.Path()) {
		t.Fatal("pin still in /proc/self/mountinfo after Remove")
	}
	if _, err := os.Stat(ns.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pin file still there: %v", err)
	}
	if ns.Exists() {
		t.Fatal("Exists() = true after Remove")
	}
	if err := ns.Remove(); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if err := ns.Do(func() error { return nil }); err == nil {
		t.Fatal("Do on removed netns succeeded")
	}
	if err := LoadNetNS(filepath.Join(dir, "missing")).Remove(); err != nil {
		t.Fatalf("Remove of missing pin: %v", err)
	}
}

func TestNewNetNSBadName(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := NewNetNS(t.TempDir(), name); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewNetNS(%q) err = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestPinNetNSOfAProcess(t *testing.T) {
	requireRoot(t)
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	dir := t.TempDir()
	unmountDirOnCleanup(t, dir)
	src := fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)
	ns, err := PinNetNS(dir, "pinned", src)
	if err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	unix.Stat(src, &a)
	unix.Stat(ns.Path(), &b)
	if a.Ino != b.Ino {
		t.Fatal("the pin does not name the process's netns")
	}
	if _, err := PinNetNS(dir, "pinned", src); !errors.Is(err, os.ErrExist) {
		t.Fatalf("pinning twice: %v", err)
	}
	if err := ns.Remove(); err != nil || pinMounted(t, ns.Path()) {
		t.Fatalf("remove: %v", err)
	}
	if _, err := PinNetNS(dir, "bad", "/proc/self/ns/nonexistent"); err == nil {
		t.Fatal("a bad source must fail")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !os.IsNotExist(err) {
		t.Fatal("a failed pin left its file")
	}
}
