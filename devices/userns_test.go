package devices

import (
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A device found under a directory, or given at another container path,
// is recorded with its host path; in a user namespace it becomes a bind
// mount of that host path, never of its container path on the host.
func TestBindMovedDevices(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "devs")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "sub/b"} {
		if err := unix.Mknod(filepath.Join(dir, n), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("mknod: %v", err)
		}
	}
	requested := []Device{
		{HostPath: dir, ContainerPath: "/dev/x", Permissions: "rw"},
		{HostPath: filepath.Join(dir, "a"), Permissions: "r"}, // same path inside: not moved
	}
	devs, _, moved, err := Build(requested, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/dev/x/a": filepath.Join(dir, "a"), "/dev/x/sub/b": filepath.Join(dir, "sub/b")}
	if len(moved) != len(want) {
		t.Fatalf("moved %v, want %v", moved, want)
	}
	for c, h := range want {
		if moved[c] != h {
			t.Errorf("moved[%s] = %q, want %q", c, moved[c], h)
		}
	}
	kept, mounts := BindMoved(devs, moved, []specs.Mount{{Destination: "/proc"}})
	if len(kept) != 1 || kept[0].Path != filepath.Join(dir, "a") {
		t.Errorf("devices kept %+v", kept)
	}
	if len(mounts) != 3 {
		t.Fatalf("mounts %+v", mounts)
	}
	for _, m := range mounts[1:] {
		if m.Type != "bind" || m.Source != want[m.Destination] {
			t.Errorf("mount %+v: want a bind of %q", m, want[m.Destination])
		}
	}
}
