package container

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func i64p(v int64) *int64 { return &v }

var denyAll = specs.LinuxDeviceCgroup{Allow: false, Access: "rwm"}

func sameRule(a, b specs.LinuxDeviceCgroup) bool {
	eq := func(x, y *int64) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return a.Allow == b.Allow && a.Type == b.Type && a.Access == b.Access && eq(a.Major, b.Major) && eq(a.Minor, b.Minor)
}

func TestBuildSpecDefaultDevices(t *testing.T) {
	s := mustBuild(t, testInput(t))
	if len(s.Linux.Devices) != 0 {
		t.Fatalf("devices = %+v", s.Linux.Devices)
	}
	if r := s.Linux.Resources.Devices; len(r) != 1 || !sameRule(r[0], denyAll) {
		t.Fatalf("device rules = %+v, want deny all", r)
	}
}

func TestBuildSpecDeviceNode(t *testing.T) {
	link := filepath.Join(t.TempDir(), "null-link")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, hostPath := range []string{"/dev/null", link} {
		t.Run(hostPath, func(t *testing.T) {
			in := testInput(t)
			in.Config.Devices = []Device{
				{HostPath: hostPath, ContainerPath: "/dev/xnull", Permissions: "rw"},
				{HostPath: "/dev/zero"},
			}
			s := mustBuild(t, in)
			d := s.Linux.Devices
			if len(d) != 2 || d[0].Path != "/dev/xnull" || d[0].Type != "c" || d[0].Major != 1 || d[0].Minor != 3 ||
				d[0].FileMode == nil || d[0].UID == nil || d[0].GID == nil {
				t.Fatalf("devices = %+v", d)
			}
			if d[1].Path != "/dev/zero" || d[1].Major != 1 || d[1].Minor != 5 {
				t.Fatalf("devices = %+v", d)
			}
			want := []specs.LinuxDeviceCgroup{
				denyAll,
				{Allow: true, Type: "c", Major: i64p(1), Minor: i64p(3), Access: "rw"},
				{Allow: true, Type: "c", Major: i64p(1), Minor: i64p(5), Access: "rwm"},
			}
			r := s.Linux.Resources.Devices
			if !slices.EqualFunc(r, want, sameRule) {
				t.Fatalf("rules = %+v, want %+v", r, want)
			}
		})
	}
}

func TestBuildSpecDeviceDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mknod")
	}
	dir := t.TempDir()
	mknod := func(name string, mode uint32, major, minor uint32) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknod(p, mode, int(unix.Mkdev(major, minor))); err != nil {
			t.Fatal(err)
		}
	}
	mknod("a", unix.S_IFCHR|0o666, 1, 3)
	mknod("sub/b", unix.S_IFBLK|0o660, 7, 42)
	mknod("fifo", unix.S_IFIFO|0o600, 0, 0)
	mknod("pts/skipped", unix.S_IFCHR|0o600, 136, 9)
	mknod("console", unix.S_IFCHR|0o600, 5, 1)
	writeFile(t, filepath.Join(dir, "regular"), "x")

	in := testInput(t)
	in.Config.Devices = []Device{{HostPath: dir, ContainerPath: "/dev/mine", Permissions: "r"}}
	s := mustBuild(t, in)
	var got []string
	for _, d := range s.Linux.Devices {
		got = append(got, d.Type+" "+d.Path)
	}
	if want := []string{"c /dev/mine/a", "b /dev/mine/sub/b"}; !slices.Equal(got, want) {
		t.Fatalf("devices = %v, want %v", got, want)
	}
	want := []specs.LinuxDeviceCgroup{
		denyAll,
		{Allow: true, Type: "c", Major: i64p(1), Minor: i64p(3), Access: "r"},
		{Allow: true, Type: "b", Major: i64p(7), Minor: i64p(42), Access: "r"},
	}
	if r := s.Linux.Resources.Devices; !slices.EqualFunc(r, want, sameRule) {
		t.Fatalf("rules = %+v, want %+v", r, want)
	}

	// A fifo named directly is refused.
	in.Config.Devices = []Device{{HostPath: filepath.Join(dir, "fifo"), ContainerPath: "/dev/f"}}
	_, err := BuildSpec(in)
	wantInvalid(t, err)
}

func TestBuildSpecInvalidDevices(t *testing.T) {
	regular := filepath.Join(t.TempDir(), "file")
	writeFile(t, regular, "x")
	tests := []struct {
		name string
		dev  Device
	}{
		{"missing", Device{HostPath: "/dev/does-not-exist-minicri", ContainerPath: "/dev/x"}},
		{"not a device", Device{HostPath: regular, ContainerPath: "/dev/x"}},
		{"bad permissions", Device{HostPath: "/dev/null", ContainerPath: "/dev/x", Permissions: "rwx"}},
		{"no host path", Device{ContainerPath: "/dev/x"}},
		{"relative container path", Device{HostPath: "/dev/null", ContainerPath: "dev/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Config.Devices = []Device{tt.dev}
			_, err := BuildSpec(in)
			wantInvalid(t, err)
		})
	}
}

func TestBuildSpecPrivilegedDevices(t *testing.T) {
	in := testInput(t)
	in.Config.Security.Privileged = true
	in.Config.Devices = []Device{{HostPath: "/dev/zero", ContainerPath: "/dev/null"}}
	s := mustBuild(t, in)
	r := s.Linux.Resources.Devices
	if len(r) != 1 || !sameRule(r[0], specs.LinuxDeviceCgroup{Allow: true, Access: "rwm"}) {
		t.Fatalf("rules = %+v, want allow all", r)
	}
	paths := map[string]specs.LinuxDevice{}
	for _, d := range s.Linux.Devices {
		if _, dup := paths[d.Path]; dup {
			t.Fatalf("device %s twice", d.Path)
		}
		paths[d.Path] = d
	}
	// The request's device keeps its path; host devices fill the rest.
	if d := paths["/dev/null"]; d.Major != 1 || d.Minor != 5 {
		t.Fatalf("/dev/null = %+v, want the requested /dev/zero", d)
	}
	if _, ok := paths["/dev/zero"]; !ok {
		t.Fatalf("host /dev/zero missing from %d devices", len(paths))
	}
	if _, ok := paths["/dev/console"]; ok {
		t.Fatal("/dev/console must be skipped")
	}
	for p := range paths {
		if filepath.Dir(p) == "/dev/pts" {
			t.Fatalf("%s must be skipped", p)
		}
	}
}
