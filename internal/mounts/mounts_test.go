package mounts

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestUnmountAllUnstacksEverything(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	for range 3 {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := UnmountAll(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(b), " "+dir+" ") {
		t.Fatal("a mount is left")
	}
	if err := UnmountAll(dir); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if err := UnmountAll(dir + "/missing"); err != nil {
		t.Fatalf("missing path: %v", err)
	}
}
