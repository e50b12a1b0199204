package mounts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layers makes n lower dirs with long names (as image layers have), each
// holding its own file and its number in a shared file, bottom first; it
// returns them top first, as Overlay takes them.
func layers(t *testing.T, n int) []string {
	t.Helper()
	dir := t.TempDir()
	out := make([]string, n)
	for i := range n {
		l := filepath.Join(dir, fmt.Sprintf("%064d", i))
		if err := os.Mkdir(l, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{fmt.Sprintf("f%d", i): "x", "which": fmt.Sprint(i)} {
			if err := os.WriteFile(filepath.Join(l, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out[n-1-i] = l
	}
	return out
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// 128 layers with 64-character names need about 8 KiB of lowerdir=: more
// than mount(2) takes. Both a writable overlay and a lower-only one mount,
// see the bottom and the top layer, and the top layer wins.
func TestOverlayMountsMoreLayersThanAPageOfOptions(t *testing.T) {
	needRoot(t)
	lower := layers(t, 128)
	if n := len(strings.Join(lower, ":")); n < os.Getpagesize() {
		t.Fatalf("test bug: %d bytes of lower dirs fit a page", n)
	}
	fs := t.TempDir()
	upper, work, target := filepath.Join(fs, "upper"), filepath.Join(fs, "work"), filepath.Join(fs, "mnt")
	for _, d := range []string{upper, work, target, target + "-ro"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fdsBefore := openFDs(t)
	for _, c := range []struct{ target, upper, work string }{{target, upper, work}, {target + "-ro", "", ""}} {
		if err := Overlay(c.target, lower, c.upper, c.work, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { UnmountAll(c.target) })
		for _, f := range []string{"f0", "f127"} {
			if _, err := os.Stat(filepath.Join(c.target, f)); err != nil {
				t.Fatalf("%s: layer file %s: %v", c.target, f, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(c.target, "which")); string(b) != "127" {
			t.Fatalf("%s: the top layer does not win: %q", c.target, b)
		}
	}
	if err := os.WriteFile(filepath.Join(target, "new"), nil, 0o644); err != nil {
		t.Fatalf("write through the overlay: %v", err)
	}
	if _, err := os.Stat(filepath.Join(upper, "new")); err != nil {
		t.Fatalf("the write did not land in upper: %v", err)
	}
	// The descriptors are closed and the working directory is untouched.
	if n := openFDs(t); n != fdsBefore {
		t.Fatalf("%d descriptors open, %d before", n, fdsBefore)
	}
	if wd, _ := os.Getwd(); strings.HasPrefix(wd, "/proc") {
		t.Fatalf("working directory moved to %s", wd)
	}
}

func TestOverlayFewLayersUsesPaths(t *testing.T) {
	needRoot(t)
	lower := layers(t, 2)
	target := t.TempDir()
	if err := Overlay(target, lower, "", "", 0); err != nil {
		t.Fatal(err)
	}
	defer UnmountAll(target)
	b, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(b), "lowerdir="+lower[0]) {
		t.Fatal("a short overlay is not mounted with its layer paths")
	}
}

func TestOverlayMissingLayerFails(t *testing.T) {
	needRoot(t)
	lower := append(layers(t, 100), "/nonexistent/layer")
	if err := Overlay(t.TempDir(), lower, "", "", 0); err == nil {
		t.Fatal("no error for a missing layer")
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
