package container

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
