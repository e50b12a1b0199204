package lazy

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	digest "github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"
)

const fuseConnections = "/sys/fs/fuse/connections"

// withFusectl mounts the FUSE control filesystem for the test when it is not.
func withFusectl(t *testing.T) {
	t.Helper()
	if m, _ := mountinfo.Mounted(fuseConnections); m {
		return
	}
	if err := unix.Mount("fusectl", fuseConnections, "fusectl", 0, ""); err != nil {
		t.Skipf("cannot mount fusectl: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(fuseConnections, 0) })
}

// connDir is the FUSE connection of the filesystem mounted at mnt.
func connDir(t *testing.T, mnt string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(fuseConnections, fmt.Sprint(unix.Minor(st.Dev))) // major 0: the name is the minor
}

// TestUnmountLeavesNothing: after Unmount and Close of a layer that was read
// and fetched in the background, there is no mount, no FUSE connection and
// no goroutine more than before.
func TestUnmountLeavesNothing(t *testing.T) {
	withFusectl(t)
	entries, spec, _ := layerFixture(t)
	mnt := spec.Mountpoint
	blob, err := httpSource(spec.Source)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	l, err := Open(context.Background(), blob, Options{Dir: spec.Dir, TOCDigest: digest.Digest(spec.TOCDigest), SpanBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Mount(mnt, l, false)
	if err != nil {
		t.Fatal(err)
	}
	conn := connDir(t, mnt)
	if _, err := os.Stat(conn); err != nil {
		t.Fatalf("no FUSE connection for the mount: %v", err)
	}
	l.Background()
	if b, err := os.ReadFile(filepath.Join(mnt, "bin/app")); err != nil || !bytes.Equal(b, entryData(entries, "bin/app")) {
		t.Fatalf("read: %v", err)
	}
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if on, err := mountinfo.Mounted(mnt); err != nil || on {
		t.Errorf("still mounted after Unmount (%v)", err)
	}
	waitFor(t, 5*time.Second, func() bool { _, err := os.Stat(conn); return errors.Is(err, os.ErrNotExist) })
	noLeak(t, before)
}

// noLeak waits for the goroutines to be no more than before.
func noLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOverlayLower: the mounted layer works as an overlayfs lower layer
// above another: its whiteout hides the file below, its opaque directory the
// directory's old entries; its own files read through the overlay.
func TestOverlayLower(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	m := mountFixture(t, newRegistry(t, blob), toc, Options{})
	dir := t.TempDir()
	base, merged := filepath.Join(dir, "base"), filepath.Join(dir, "merged")
	for _, p := range []string{"opq/old", "gone", "base-only"} {
		if err := os.MkdirAll(filepath.Join(base, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(merged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, "lowerdir="+m.Mountpoint+":"+base); err != nil {
		t.Fatalf("overlay over the lazy layer: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(merged, unix.MNT_DETACH) })
	for _, c := range []struct {
		path string
		want error
	}{{"gone", os.ErrNotExist}, {"opq/old", os.ErrNotExist}, {"opq/kept", nil}, {"base-only", nil}, {"bin/app", nil}} {
		if _, err := os.Lstat(filepath.Join(merged, c.path)); !errors.Is(err, c.want) && (err != nil || c.want != nil) {
			t.Errorf("%s in the overlay: %v, want %v", c.path, err, c.want)
		}
	}
	b, err := os.ReadFile(filepath.Join(merged, "bin/app"))
	if err != nil || !bytes.Equal(b, entryData(entries, "bin/app")) {
		t.Errorf("bin/app through the overlay: %v", err)
	}
	names, _ := os.ReadDir(filepath.Join(merged, "opq"))
	if len(names) != 1 || strings.Contains(fmt.Sprint(names), "old") {
		t.Errorf("opaque dir lists %v", names)
	}
}

// TestOverlayOfLazyLayersOnly: an overlay whose lower layers are all lazy
// mounts (an image volume of an image of eStargz layers: no upper, no
// unpacked layer) serves its names: overlayfs takes its name length limit
// from its layers' statfs, and lazyfs says 255. Before, it said 0, and
// every name was ENAMETOOLONG.
func TestOverlayOfLazyLayersOnly(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	upper, lower := mountFixture(t, r, toc, Options{}), mountFixture(t, r, toc, Options{})
	var st unix.Statfs_t
	if err := unix.Statfs(upper.Mountpoint, &st); err != nil || st.Namelen != 255 || st.Bsize != 4096 || st.Blocks == 0 {
		t.Errorf("statfs of a lazy mount: %+v, %v", st, err)
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if err := os.Mkdir(merged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, "lowerdir="+upper.Mountpoint+":"+lower.Mountpoint); err != nil {
		t.Fatalf("overlay of two lazy layers: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(merged, unix.MNT_DETACH) })
	b, err := os.ReadFile(filepath.Join(merged, "bin/app"))
	if err != nil || !bytes.Equal(b, entryData(entries, "bin/app")) {
		t.Errorf("bin/app through an overlay of lazy layers only: %d bytes, %v", len(b), err)
	}
}
