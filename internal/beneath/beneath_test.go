package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func openDir(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func TestOpenRefusesLinksAndEscapes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "outside"), []byte("host"), 0o644)
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "f"), []byte("mine"), 0o644)
	os.Symlink(filepath.Join(dir, "outside"), filepath.Join(root, "abs"))
	os.Symlink("d/f", filepath.Join(root, "rel"))
	os.Symlink(dir, filepath.Join(root, "dirlink"))
	fd := openDir(t, root)
	if f, err := Open(fd, "d/f", unix.O_RDONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		unix.Close(f)
	}
	for _, name := range []string{"abs", "rel", "dirlink/outside", "../outside", "/etc/passwd"} {
		if f, err := Open(fd, name, unix.O_RDONLY, 0); err == nil {
			unix.Close(f)
			t.Errorf("%s opened", name)
		}
	}
	// In root, links are followed but stay inside.
	if f, err := OpenInRoot(fd, "rel", unix.O_RDONLY); err != nil {
		t.Errorf("rel in root: %v", err)
	} else {
		unix.Close(f)
	}
	if f, err := OpenInRoot(fd, "abs", unix.O_RDONLY); err == nil || !errors.Is(err, unix.ENOENT) {
		unix.Close(f)
		t.Errorf("abs in root reached the host file: %v", err)
	}
}

func TestReopenAndMkdirAll(t *testing.T) {
	root := t.TempDir()
	fd := openDir(t, root)
	sub, err := MkdirAll(fd, "a/b/c", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sub)
	rd, err := Reopen(sub, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	unix.Fstat(rd, &a)
	unix.Stat(filepath.Join(root, "a/b/c"), &b)
	unix.Close(rd)
	if a.Ino != b.Ino {
		t.Fatal("reopened another inode")
	}
	os.Symlink(t.TempDir(), filepath.Join(root, "a", "link"))
	if fd2, err := MkdirAll(fd, "a/link/x", 0o755); err == nil {
		unix.Close(fd2)
		t.Fatal("MkdirAll went through a link")
	}
}
