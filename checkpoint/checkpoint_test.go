package checkpoint

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/container"
)

// readTar returns the entries of a tar stream: name -> content (regular
// files) or type marker.
func readTar(t *testing.T, r io.Reader) (map[string]string, []string) {
	t.Helper()
	tr := tar.NewReader(r)
	files := map[string]string{}
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			files[hdr.Name] = string(b)
		case tar.TypeLink:
			files[hdr.Name] = "link:" + hdr.Linkname
		case tar.TypeSymlink:
			files[hdr.Name] = "symlink:" + hdr.Linkname
		case tar.TypeDir:
			files[hdr.Name] = "dir"
		default:
			files[hdr.Name] = "other"
		}
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointArchiveLayout(t *testing.T) {
	dir := t.TempDir()
	images, work, upper, lower, tmp := filepath.Join(dir, "images"), filepath.Join(dir, "work"),
		filepath.Join(dir, "upper"), filepath.Join(dir, "lower"), filepath.Join(dir, "tmp")
	write(t, filepath.Join(images, "pstree.img"), "pstree")
	write(t, filepath.Join(images, "inventory.img"), "inventory")
	write(t, filepath.Join(work, "stats-dump"), "stats")
	write(t, filepath.Join(work, "dump.log"), "log")
	write(t, filepath.Join(upper, "etc", "new.conf"), "new")
	if err := os.Link(filepath.Join(upper, "etc", "new.conf"), filepath.Join(upper, "etc", "hard.conf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("new.conf", filepath.Join(upper, "etc", "sym.conf")); err != nil {
		t.Fatal(err)
	}
	// The image (lower) has /etc/motd and /var/cache/{a,b}; the container deleted
	// /etc/motd (a whiteout) and replaced /var/cache by a directory holding only b
	// (opaque).
	write(t, filepath.Join(lower, "etc", "motd"), "motd")
	write(t, filepath.Join(lower, "var", "cache", "a"), "a")
	write(t, filepath.Join(lower, "var", "cache", "b"), "b")
	write(t, filepath.Join(upper, "var", "cache", "b"), "b2")
	wantDeleted := []string{}
	if err := unix.Mknod(filepath.Join(upper, "etc", "motd"), unix.S_IFCHR, 0); err == nil {
		wantDeleted = append(wantDeleted, "/etc/motd")
	} else {
		t.Logf("no whiteout (needs CAP_MKNOD): %v", err)
	}
	if err := unix.Setxattr(filepath.Join(upper, "var", "cache"), "trusted.overlay.opaque", []byte("y"), 0); err == nil {
		wantDeleted = append(wantDeleted, "/var/cache/a")
	} else {
		t.Logf("no opaque dir (needs CAP_SYS_ADMIN): %v", err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	err := writeCheckpointArchive(context.Background(), &buf, checkpointParts{
		Images: images, Work: work, Config: []byte(`{"id":"c1"}`), Spec: []byte(`{"ociVersion":"1.2.0"}`),
		Upper: upper, Lower: []string{lower}, Tmp: tmp,
	})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := readTar(t, bytes.NewReader(buf.Bytes()))
	for name, want := range map[string]string{
		"checkpoint/":              "dir",
		"checkpoint/pstree.img":    "pstree",
		"checkpoint/inventory.img": "inventory",
		"config.dump":              `{"id":"c1"}`,
		"spec.dump":                `{"ociVersion":"1.2.0"}`,
		"stats-dump":               "stats",
		"dump.log":                 "log",
	} {
		if files[name] != want {
			t.Errorf("%s: got %q, want %q", name, files[name], want)
		}
	}
	diff, ok := files["rootfs-diff.tar"]
	if !ok {
		t.Fatalf("no rootfs-diff.tar in %v", files)
	}
	diffFiles, diffNames := readTar(t, bytes.NewReader([]byte(diff)))
	for name, want := range map[string]string{
		"etc/":          "dir",
		"etc/hard.conf": "new", // first in walk order
		"etc/new.conf":  "link:etc/hard.conf",
		"etc/sym.conf":  "symlink:new.conf",
		"var/cache/b":   "b2",
		"var/cache/":    "dir",
		"var/":          "dir",
	} {
		if diffFiles[name] != want {
			t.Errorf("rootfs-diff.tar %s: got %q, want %q (all %v)", name, diffFiles[name], want, diffNames)
		}
	}
	if _, ok := diffFiles["etc/motd"]; ok {
		t.Errorf("rootfs-diff.tar holds the whiteout etc/motd")
	}
	var deleted []string
	if data, ok := files["deleted.files"]; ok {
		if err := json.Unmarshal([]byte(data), &deleted); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(wantDeleted)
	if len(deleted) != len(wantDeleted) || (len(deleted) > 0 && !equal(deleted, wantDeleted)) {
		t.Errorf("deleted.files %v, want %v", deleted, wantDeleted)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("scratch files left in %s: %v", tmp, ents)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckpointArchiveStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "images", "pstree.img"), "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := writeCheckpointArchive(ctx, io.Discard, checkpointParts{
		Images: filepath.Join(dir, "images"), Upper: dir, Tmp: dir,
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestCheckpointRejectsBadLocations(t *testing.T) {
	m, err := container.New(context.Background(), container.Options{Root: t.TempDir(), State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cp := NewCheckpointer(context.Background(), m, nil)
	for _, loc := range []string{"", "relative/path.tar"} {
		if err := cp.Checkpoint(context.Background(), "x", loc, time.Second); !errors.Is(err, ErrInvalid) {
			t.Errorf("location %q: got %v, want ErrInvalid", loc, err)
		}
	}
	if err := cp.Checkpoint(context.Background(), "nope", "/tmp/x.tar", time.Second); !errors.Is(err, container.ErrNotFound) {
		t.Errorf("unknown container: got %v, want ErrNotFound", err)
	}
}

func TestCheckpointCommitGate(t *testing.T) {
	// Abandoned first: the archive is never published.
	g := &commitGate{}
	if g.abandon() {
		t.Fatal("abandon reported a commit that did not happen")
	}
	published := false
	if err := g.commit(func() error { published = true; return nil }); err == nil || published {
		t.Fatalf("commit after abandon: err %v, published %v", err, published)
	}
	// Committed first: the caller learns the archive is in place.
	g = &commitGate{}
	if err := g.commit(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if !g.abandon() {
		t.Fatal("abandon after commit did not report the commit")
	}
	// A failed publish is not a commit.
	g = &commitGate{}
	if err := g.commit(func() error { return os.ErrPermission }); !errors.Is(err, os.ErrPermission) {
		t.Fatal(err)
	}
	if g.abandon() {
		t.Fatal("a failed publish counted as a commit")
	}
}
