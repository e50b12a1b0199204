package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The attack: the container is running while its writable layer is archived,
// and swaps a file, or a directory, for a symlink to host data between the
// moment the walk looks at it and the moment it is read. The hook makes the
// swap land in that window every time.
func TestRootfsDiffNeverFollowsASwappedSymlink(t *testing.T) {
	dir := t.TempDir()
	upper, host := filepath.Join(dir, "upper"), filepath.Join(dir, "host")
	const secret = "root:HOST-SECRET-HASH:19000:0:99999:7:::"
	write(t, filepath.Join(host, "shadow"), secret)
	write(t, filepath.Join(upper, "etc", "shadow"), "container's own shadow")
	write(t, filepath.Join(upper, "data", "file"), "container data")
	write(t, filepath.Join(upper, "keep"), "kept")
	swap := map[string]func(){
		// A file becomes a link to the host's file.
		"etc/shadow": func() {
			os.Remove(filepath.Join(upper, "etc", "shadow"))
			os.Symlink(filepath.Join(host, "shadow"), filepath.Join(upper, "etc", "shadow"))
		},
		// A directory becomes a link to a host directory.
		"data": func() {
			os.Rename(filepath.Join(upper, "data"), filepath.Join(upper, "moved"))
			os.Symlink(host, filepath.Join(upper, "data"))
		},
	}
	rootfsDiffRace = func(rel string) {
		if f, ok := swap[rel]; ok {
			delete(swap, rel)
			f()
		}
	}
	defer func() { rootfsDiffRace = nil }()

	var buf bytes.Buffer
	if _, err := writeRootfsDiff(context.Background(), &buf, upper, nil); err != nil {
		t.Fatal(err)
	}
	if len(swap) != 0 {
		t.Fatalf("the walk never reached %v: the test did not attack", swap)
	}
	files, names := readTar(t, bytes.NewReader(buf.Bytes()))
	for name, content := range files {
		if strings.Contains(content, "HOST-SECRET") {
			t.Errorf("rootfs-diff.tar carries host data in %s", name)
		}
	}
	if _, ok := files["data/shadow"]; ok {
		t.Errorf("rootfs-diff.tar lists the host directory's entries: %v", names)
	}
	if files["keep"] != "kept" {
		t.Errorf("keep: got %q (all %v)", files["keep"], names)
	}
}

// An image whose layer holds a link to a host directory, under a directory
// the container made opaque: the host directory's names must not be listed
// into deleted.files.
func TestRootfsDiffDoesNotFollowLinksInLowerDirs(t *testing.T) {
	dir := t.TempDir()
	upper, lower, host := filepath.Join(dir, "upper"), filepath.Join(dir, "lower"), filepath.Join(dir, "host")
	write(t, filepath.Join(host, "host-only-name"), "x")
	write(t, filepath.Join(lower, "etc", "motd"), "motd")
	if err := os.Symlink(host, filepath.Join(lower, "etc", "cache")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(upper, "etc", "cache", "mine"), "mine")
	if err := unix.Setxattr(filepath.Join(upper, "etc", "cache"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("no opaque dir (needs CAP_SYS_ADMIN): %v", err)
	}
	deleted, err := writeRootfsDiff(context.Background(), io.Discard, upper, []string{lower})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deleted {
		if strings.Contains(d, "host-only-name") {
			t.Fatalf("deleted.files lists a host directory's entry: %v", deleted)
		}
	}
}

// The attack: the container (CAP_MKNOD by default) swaps a file it wrote
// for a device node, or a FIFO, between the moment the walk looks at it and
// the moment it is read. Opening a device runs its driver, as host root
// and outside the container's device cgroup (a watchdog, a tape that
// rewinds): the walk must never open what it did not look at. inotify sees
// every open of the swapped-in nodes (an O_PATH descriptor opens nothing).
func TestRootfsDiffNeverOpensASwappedInDevice(t *testing.T) {
	upper := filepath.Join(t.TempDir(), "upper")
	write(t, filepath.Join(upper, "etc", "watchdog"), "a file")
	write(t, filepath.Join(upper, "fifo"), "a file")
	write(t, filepath.Join(upper, "dir", "f"), "in a dir")
	write(t, filepath.Join(upper, "keep"), "kept")
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	watched := map[int32]string{}
	plant := func(rel string, mode uint32, dev int) {
		p := filepath.Join(upper, rel)
		if err := os.RemoveAll(p); err != nil {
			t.Error(err)
		}
		if err := unix.Mknod(p, mode|0o666, dev); err != nil {
			t.Errorf("mknod %s: %v", rel, err)
			return
		}
		wd, err := unix.InotifyAddWatch(in, p, unix.IN_OPEN)
		if err != nil {
			t.Errorf("watch %s: %v", rel, err)
		}
		watched[int32(wd)] = rel
	}
	swap := map[string]func(){
		"etc/watchdog": func() { plant("etc/watchdog", unix.S_IFCHR, int(unix.Mkdev(1, 3))) }, // /dev/null's numbers
		"fifo":         func() { plant("fifo", unix.S_IFIFO, 0) },
		"dir":          func() { plant("dir", unix.S_IFCHR, int(unix.Mkdev(1, 3))) },
	}
	rootfsDiffRace = func(rel string) {
		if f, ok := swap[rel]; ok {
			delete(swap, rel)
			f()
		}
	}
	defer func() { rootfsDiffRace = nil }()

	var buf bytes.Buffer
	if _, err := writeRootfsDiff(context.Background(), &buf, upper, nil); err != nil {
		t.Fatal(err)
	}
	if len(swap) != 0 || len(watched) != 3 {
		t.Fatalf("the walk never reached %v (watched %v): the test did not attack", swap, watched)
	}
	ev := make([]byte, 4096)
	n, _ := unix.Read(in, ev)
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		e := (*unix.InotifyEvent)(unsafe.Pointer(&ev[off]))
		if e.Mask&unix.IN_OPEN != 0 {
			t.Errorf("the walk opened the swapped-in %s", watched[e.Wd])
		}
		off += unix.SizeofInotifyEvent + int(e.Len)
	}
	files, names := readTar(t, bytes.NewReader(buf.Bytes()))
	if files["keep"] != "kept" {
		t.Errorf("keep: got %q (all %v)", files["keep"], names)
	}
}

// A container nests directories deeper than any real tree to make the walk,
// which holds a descriptor per level, exhaust the daemon's descriptors: the
// walk stops at maxDiffDepth with a clear error.
func TestRootfsDiffBoundsTheDepth(t *testing.T) {
	upper := filepath.Join(t.TempDir(), "upper")
	deep := upper + strings.Repeat("/d", maxDiffDepth)
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := writeRootfsDiff(context.Background(), io.Discard, upper, nil); err != nil {
		t.Fatalf("%d levels: %v", maxDiffDepth, err)
	}
	if err := os.Mkdir(deep+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := writeRootfsDiff(context.Background(), io.Discard, upper, nil)
	if !errors.Is(err, ErrFailedPrecondition) || !strings.Contains(err.Error(), "deep") {
		t.Fatalf("%d levels: %v", maxDiffDepth+1, err)
	}
}
