package container

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func destinations(ms []specs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Destination)
	}
	return out
}

func findMount(t *testing.T, ms []specs.Mount, dst string) specs.Mount {
	t.Helper()
	var found []specs.Mount
	for _, m := range ms {
		if m.Destination == dst {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d mounts at %s in %v", len(found), dst, destinations(ms))
	}
	return found[0]
}

// stubMountLookup makes every host path look mounted with the given
// mountinfo optional fields.
func stubMountLookup(optional string) func() {
	old := lookupMountFn
	lookupMountFn = func(path string) (*mountinfo.Info, error) {
		return &mountinfo.Info{Mountpoint: "/stub", Optional: optional}, nil
	}
	return func() { lookupMountFn = old }
}

func TestBuildSpecDefaultMounts(t *testing.T) {
	in := testInput(t)
	s := mustBuild(t, in)
	want := []string{"/proc", "/dev", "/dev/pts", "/dev/mqueue", "/sys", "/sys/fs/cgroup",
		"/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/dev/shm"}
	if got := destinations(s.Mounts); !slices.Equal(got, want) {
		t.Fatalf("mounts = %v, want %v", got, want)
	}
	check := func(dst, typ, src string, opts ...string) {
		t.Helper()
		m := findMount(t, s.Mounts, dst)
		if m.Type != typ || m.Source != src || !slices.Equal(m.Options, opts) {
			t.Fatalf("mount %s = %+v, want %s %s %v", dst, m, typ, src, opts)
		}
	}
	check("/proc", "proc", "proc", "nosuid", "noexec", "nodev")
	check("/dev", "tmpfs", "tmpfs", "nosuid", "strictatime", "mode=755", "size=65536k")
	check("/dev/pts", "devpts", "devpts", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5")
	check("/dev/mqueue", "mqueue", "mqueue", "nosuid", "noexec", "nodev")
	check("/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev", "ro")
	check("/sys/fs/cgroup", "cgroup", "cgroup", "nosuid", "noexec", "nodev", "relatime", "ro")
	check("/etc/hostname", "bind", in.Pod.HostnameFile, "rbind", "rprivate", "rw")
	check("/etc/hosts", "bind", in.Pod.HostsFile, "rbind", "rprivate", "rw")
	check("/etc/resolv.conf", "bind", in.Pod.ResolvConfFile, "rbind", "rprivate", "rw")
	check("/dev/shm", "bind", in.Pod.ShmPath, "rbind", "rprivate", "rw")

	// Read-only rootfs: the pod files are read-only too, /dev/shm is not.
	in.Config.Security.ReadonlyRootfs = true
	s = mustBuild(t, in)
	check("/etc/hostname", "bind", in.Pod.HostnameFile, "rbind", "rprivate", "ro")
	check("/etc/hosts", "bind", in.Pod.HostsFile, "rbind", "rprivate", "ro")
	check("/etc/resolv.conf", "bind", in.Pod.ResolvConfFile, "rbind", "rprivate", "ro")
	check("/dev/shm", "bind", in.Pod.ShmPath, "rbind", "rprivate", "rw")

	// Privileged: sysfs and cgroupfs read-write.
	in.Config.Security.Privileged = true
	s = mustBuild(t, in)
	check("/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev", "rw")
	check("/sys/fs/cgroup", "cgroup", "cgroup", "nosuid", "noexec", "nodev", "relatime", "rw")
}

func TestBuildSpecPodMountFallbacks(t *testing.T) {
	in := testInput(t)
	in.Pod.HostIPC = true
	s := mustBuild(t, in)
	if m := findMount(t, s.Mounts, "/dev/shm"); m.Source != "/dev/shm" || m.Type != "bind" {
		t.Fatalf("host IPC /dev/shm = %+v", m)
	}
	findMount(t, s.Mounts, "/dev/mqueue")

	// Missing pod files are skipped; a missing shm dir leaves the tmpfs.
	in = testInput(t)
	in.Pod.HostsFile = filepath.Join(t.TempDir(), "gone")
	in.Pod.ResolvConfFile = ""
	in.Pod.ShmPath = filepath.Join(t.TempDir(), "gone")
	s = mustBuild(t, in)
	for _, m := range s.Mounts {
		if m.Destination == "/etc/hosts" || m.Destination == "/etc/resolv.conf" {
			t.Fatalf("unexpected %+v", m)
		}
	}
	if m := findMount(t, s.Mounts, "/dev/shm"); m.Type != "tmpfs" {
		t.Fatalf("/dev/shm = %+v, want the default tmpfs", m)
	}
}

func TestBuildSpecCRIMounts(t *testing.T) {
	defer stubMountLookup("shared:1 master:2")()
	host := t.TempDir()
	dir := func(name string) string {
		p := filepath.Join(host, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	myHosts := filepath.Join(host, "my-hosts")
	writeFile(t, myHosts, "127.0.0.1 me\n")

	in := testInput(t)
	in.Config.Mounts = []Mount{
		{ContainerPath: "/a/b/c", HostPath: dir("abc")},
		{ContainerPath: "/etc/hosts", HostPath: myHosts, Readonly: true},
		{ContainerPath: "/a", HostPath: dir("a"), Readonly: true, RecursiveReadOnly: true},
		{ContainerPath: "/data/", HostPath: dir("data"), Propagation: PropagationHostToContainer},
		{ContainerPath: "/shared", HostPath: dir("shared"), Propagation: PropagationBidirectional},
		{ContainerPath: "/dev/shm", HostPath: dir("shm")},
	}
	s := mustBuild(t, in)
	want := []string{"/proc", "/dev", "/dev/pts", "/dev/mqueue", "/sys", "/sys/fs/cgroup",
		// depth 1, in request order, then depth 2 (request, then pod files), then depth 3
		"/a", "/data/", "/shared",
		"/etc/hosts", "/dev/shm", "/etc/hostname", "/etc/resolv.conf",
		"/a/b/c"}
	if got := destinations(s.Mounts); !slices.Equal(got, want) {
		t.Fatalf("mounts = %v, want %v", got, want)
	}
	check := func(dst, src string, opts ...string) {
		t.Helper()
		m := findMount(t, s.Mounts, dst)
		if m.Type != "bind" || m.Source != src || !slices.Equal(m.Options, opts) {
			t.Fatalf("mount %s = %+v, want %s %v", dst, m, src, opts)
		}
	}
	check("/etc/hosts", myHosts, "rbind", "rprivate", "ro")
	check("/a", filepath.Join(host, "a"), "rbind", "rprivate", "rro")
	check("/a/b/c", filepath.Join(host, "abc"), "rbind", "rprivate", "rw")
	check("/data/", filepath.Join(host, "data"), "rbind", "rslave", "rw")
	check("/shared", filepath.Join(host, "shared"), "rbind", "rshared", "rw")
	check("/dev/shm", filepath.Join(host, "shm"), "rbind", "rprivate", "rw")
	if s.Linux.RootfsPropagation != "rshared" {
		t.Fatalf("rootfs propagation = %q, want rshared", s.Linux.RootfsPropagation)
	}
}

func TestBuildSpecRootfsPropagation(t *testing.T) {
	defer stubMountLookup("master:2")()
	tests := []struct {
		name  string
		props []Propagation
		want  string
	}{
		{"private", []Propagation{PropagationPrivate}, ""},
		{"slave", []Propagation{PropagationHostToContainer, PropagationPrivate}, "rslave"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			for i, p := range tt.props {
				in.Config.Mounts = append(in.Config.Mounts, Mount{
					ContainerPath: "/m" + string(rune('a'+i)), HostPath: t.TempDir(), Propagation: p,
				})
			}
			s := mustBuild(t, in)
			if s.Linux.RootfsPropagation != tt.want {
				t.Fatalf("rootfs propagation = %q, want %q", s.Linux.RootfsPropagation, tt.want)
			}
		})
	}
}

func TestBuildSpecPropagationNeedsSharedHostMount(t *testing.T) {
	tests := []struct {
		name     string
		optional string
		prop     Propagation
		wantErr  string
	}{
		{"bidirectional on private", "", PropagationBidirectional, "not a shared mount"},
		{"bidirectional on slave", "master:3", PropagationBidirectional, "not a shared mount"},
		{"host to container on private", "", PropagationHostToContainer, "not a shared or slave mount"},
		{"bidirectional on shared", "shared:7", PropagationBidirectional, ""},
		{"host to container on slave", "master:3", PropagationHostToContainer, ""},
		{"host to container on shared", "shared:7", PropagationHostToContainer, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer stubMountLookup(tt.optional)()
			in := testInput(t)
			in.Config.Mounts = []Mount{{ContainerPath: "/v", HostPath: t.TempDir(), Propagation: tt.prop}}
			_, err := BuildSpec(in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v wraps ErrInvalid; containerd returns a plain error", err)
			}
		})
	}
}

func TestBuildSpecInvalidMounts(t *testing.T) {
	tests := []struct {
		name  string
		mount Mount
	}{
		{"rro needs ro", Mount{ContainerPath: "/v", HostPath: "/tmp", RecursiveReadOnly: true}},
		{"rro needs private", Mount{ContainerPath: "/v", HostPath: "/tmp", Readonly: true, RecursiveReadOnly: true, Propagation: PropagationHostToContainer}},
		{"rro needs private, bidirectional", Mount{ContainerPath: "/v", HostPath: "/tmp", Readonly: true, RecursiveReadOnly: true, Propagation: PropagationBidirectional}},
		{"image volume", Mount{ContainerPath: "/v", Image: "busybox"}},
		{"relative container path", Mount{ContainerPath: "v", HostPath: "/tmp"}},
		{"no container path", Mount{HostPath: "/tmp"}},
		{"no host path", Mount{ContainerPath: "/v"}},
		{"bad propagation", Mount{ContainerPath: "/v", HostPath: "/tmp", Propagation: Propagation(5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			missing := filepath.Join(t.TempDir(), "not-created")
			in.Config.Mounts = []Mount{{ContainerPath: "/first", HostPath: missing}, tt.mount}
			_, err := BuildSpec(in)
			wantInvalid(t, err)
			if _, err := os.Stat(missing); err == nil {
				t.Fatal("an invalid request created a host path")
			}
		})
	}
}

func TestBuildSpecMountHostPaths(t *testing.T) {
	host := t.TempDir()
	real := filepath.Join(host, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(host, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(host, "missing", "deep")

	in := testInput(t)
	in.Config.Mounts = []Mount{
		{ContainerPath: "/linked", HostPath: link},
		{ContainerPath: "/created", HostPath: missing},
	}
	s := mustBuild(t, in)
	if m := findMount(t, s.Mounts, "/linked"); m.Source != real {
		t.Fatalf("symlinked host path: source = %q, want %q", m.Source, real)
	}
	if m := findMount(t, s.Mounts, "/created"); m.Source != missing {
		t.Fatalf("created host path: source = %q, want %q", m.Source, missing)
	}
	st, err := os.Stat(missing)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o755&^currentUmask() {
		t.Fatalf("missing host path not created as a 0755 directory: %v %v", st, err)
	}
}

func currentUmask() os.FileMode {
	m := unix.Umask(0)
	unix.Umask(m)
	return os.FileMode(m)
}

func TestBuildSpecMountOverDev(t *testing.T) {
	in := testInput(t)
	in.Config.Mounts = []Mount{{ContainerPath: "/dev", HostPath: t.TempDir()}}
	s := mustBuild(t, in)
	want := []string{"/proc", "/sys", "/sys/fs/cgroup", "/dev", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/dev/shm"}
	if got := destinations(s.Mounts); !slices.Equal(got, want) {
		t.Fatalf("mounts = %v, want %v", got, want)
	}
}

// TestLookupMountReal checks the mountinfo lookup against a real shared
// bind mount, the way critest prepares a Bidirectional host path.
func TestLookupMountReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "mnt")
	sub := filepath.Join(src, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, src, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(src, unix.MNT_DETACH) })
	if err := unix.Mount("", src, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	if err := ensureShared(sub); err == nil || !strings.Contains(err.Error(), `mounted on "`+src+`"`) {
		t.Fatalf("private mount: ensureShared = %v", err)
	}
	if err := ensureSharedOrSlave(sub); err == nil {
		t.Fatal("private mount: ensureSharedOrSlave passed")
	}
	if err := unix.Mount("", src, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	if err := ensureShared(sub); err != nil {
		t.Fatalf("shared mount: %v", err)
	}
	if err := ensureSharedOrSlave(sub); err != nil {
		t.Fatalf("shared mount: %v", err)
	}
	// A sibling whose name extends the mount point is not under it.
	sibling := src + "x"
	if err := os.Mkdir(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := lookupMount(sibling)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mountpoint == src {
		t.Fatalf("lookupMount(%q) = %q", sibling, info.Mountpoint)
	}
}
