package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sk_inet "github.com/checkpoint-restore/go-criu/v8/crit/images/sk-inet"
	sk_unix "github.com/checkpoint-restore/go-criu/v8/crit/images/sk-unix"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// fileSpec is a uid-1000 spec without capabilities over a rootfs holding
// a root-only file, a user's file and a read-only bind of a directory
// holding a root-only socket file.
func fileSpec(t *testing.T) *specs.Spec {
	t.Helper()
	root, src := t.TempDir(), t.TempDir()
	for path, mode := range map[string]os.FileMode{filepath.Join(root, "secret"): 0o600, filepath.Join(root, "mine"): 0o600, filepath.Join(src, "sock"): 0o600} {
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(root, "mine"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	return &specs.Spec{
		Root:    &specs.Root{Path: root},
		Process: &specs.Process{User: specs.User{UID: 1000, GID: 1000}, Capabilities: &specs.LinuxCapabilities{}},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc"},
			{Destination: "/host", Type: "bind", Source: src, Options: []string{"rbind", "ro"}},
		},
		Linux: &specs.Linux{ReadonlyPaths: []string{"/proc/sys"}},
	}
}

func TestCheckRegFile(t *testing.T) {
	spec := fileSpec(t)
	for _, tc := range []struct {
		name   string
		flags  uint32
		reason string
	}{
		{"/mine", unix.O_RDWR, ""},
		{"/missing", unix.O_RDWR, ""},
		{"/proc/self/status", unix.O_RDONLY, ""},
		{"/secret", unix.O_PATH, ""},
		{"/secret", unix.O_RDONLY, "may not"},
		{"/mine/../secret", unix.O_RDONLY, "clean absolute"},
		{"/host/sock", unix.O_WRONLY, "read-only"},
		{"/proc/sys/kernel/core_pattern", unix.O_WRONLY, "read-only"},
	} {
		err := checkRegFile(tc.name, tc.flags, spec)
		if tc.reason == "" && err != nil || tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)) {
			t.Errorf("%s %#o: %v, want %q", tc.name, tc.flags, err, tc.reason)
		}
	}
	spec.Process.Capabilities.Bounding = []string{"CAP_DAC_OVERRIDE"}
	if err := checkRegFile("/secret", unix.O_RDWR, spec); err != nil {
		t.Errorf("with CAP_DAC_OVERRIDE: %v", err)
	}
}

func TestCheckSockets(t *testing.T) {
	spec := fileSpec(t)
	inet := func(typ, port uint32) *sk_inet.InetSkEntry {
		return &sk_inet.InetSkEntry{Type: proto.Uint32(typ), SrcPort: proto.Uint32(port)}
	}
	unixSk := func(name string) *sk_unix.UnixSkEntry { return &sk_unix.UnixSkEntry{Name: []byte(name)} }
	for name, err := range map[string]error{
		"port 80":          checkInetSocket(inet(unix.SOCK_STREAM, 80), spec),
		"raw":              checkInetSocket(inet(unix.SOCK_RAW, 0), spec),
		"root-only socket": checkUnixSocket(unixSk("/host/sock"), spec),
		"root-only dir":    checkUnixSocket(unixSk("/host/new"), spec),
		"relative, no dir": checkUnixSocket(unixSk("sock"), spec),
		"unclean socket":   checkUnixSocket(unixSk("/tmp/../host/sock"), spec),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, err := range map[string]error{
		"port 8080": checkInetSocket(inet(unix.SOCK_STREAM, 8080), spec),
		"abstract":  checkUnixSocket(unixSk("\x00name"), spec),
		"proc":      checkUnixSocket(unixSk("/proc/x"), spec),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	spec.Linux.Sysctl = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
	spec.Process.Capabilities.Bounding = []string{"CAP_NET_RAW"}
	if err := checkInetSocket(inet(unix.SOCK_RAW, 80), spec); err != nil {
		t.Errorf("port 80 at start 0 with CAP_NET_RAW: %v", err)
	}
}
