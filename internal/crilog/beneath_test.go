package crilog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The attacks: a log path from the request that climbs out of the pod log
// directory, and links planted in the log directory that point outside.
func TestOpenRefusesPathsOutsideTheLogDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pod")
	for _, name := range []string{"../x.log", "a/../../x.log", "/etc/x.log", "", ".", ".."} {
		if l, err := Open(dir, name); err == nil {
			l.Close()
			t.Errorf("Open(%q) succeeded", name)
		} else if !errors.Is(err, ErrNotBeneath) {
			t.Errorf("Open(%q): %v, want ErrNotBeneath", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "x.log")); err == nil {
		t.Fatal("a log was created outside the log directory")
	}
}

func TestOpenRefusesSymlinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pod")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(outside, "shadow")
	os.WriteFile(target, []byte("secret\n"), 0o600)
	os.Symlink(target, filepath.Join(dir, "0.log"))       // the log itself
	os.Symlink(outside, filepath.Join(dir, "ctr"))        // a directory on the way
	os.Symlink("../outside/new", filepath.Join(dir, "n")) // a dangling relative link
	for _, name := range []string{"0.log", "ctr/shadow", "ctr/sub/1.log", "n"} {
		if l, err := Open(dir, name); err == nil {
			l.Close()
			t.Errorf("Open(%q) through a symlink succeeded", name)
		} else if !errors.Is(err, ErrNotBeneath) {
			t.Errorf("Open(%q): %v, want ErrNotBeneath", name, err)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "secret\n" {
		t.Fatalf("target changed: %q", data)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("files created outside the log dir: %v", ents)
	}
}

func TestOpenRefusesFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "0.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, "0.log"); err == nil {
		l.Close()
		t.Fatal("Open of a FIFO succeeded")
	}
}

// A FIFO (standing in for a device node) planted at the log name, with a
// reader waiting, is never opened: opening a device runs its driver.
func TestOpenNeverOpensASpecialFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "0.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(reader)
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, "0.log"); err == nil {
		l.Close()
		t.Fatal("Open of a FIFO succeeded")
	}
	buf := make([]byte, 4096)
	if n, _ := unix.Read(in, buf); n > 0 {
		t.Fatal("the FIFO at the log name was opened")
	}
}

func TestOpenCreatesSubdirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pod")
	l, err := Open(dir, "ctr/0.log")
	if err != nil {
		t.Fatal(err)
	}
	l.Copy(Stdout, strings.NewReader("hi\n"), nil)
	l.Close()
	if data, err := os.ReadFile(filepath.Join(dir, "ctr", "0.log")); err != nil || !strings.Contains(string(data), "stdout F hi") {
		t.Fatalf("log: %q %v", data, err)
	}
}

// ReopenContainerLog after the kubelet's rotation: a link planted at the
// log's name is not followed, and the old file stays in use.
func TestReopenRefusesSymlink(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	os.WriteFile(target, nil, 0o600)
	dir := filepath.Join(base, "pod")
	l, err := Open(dir, "0.log")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := filepath.Join(dir, "0.log")
	os.Rename(p, p+".1")
	os.Symlink(target, p)
	if err := l.Reopen(); !errors.Is(err, ErrNotBeneath) {
		t.Fatalf("Reopen through a symlink: %v, want ErrNotBeneath", err)
	}
	l.Copy(Stdout, strings.NewReader("after\n"), nil)
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Fatalf("target written: %q", data)
	}
	if data, _ := os.ReadFile(p + ".1"); !strings.Contains(string(data), "after") {
		t.Fatalf("old file not kept: %q", data)
	}
}
