package checkpoint

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/mnt"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

func testMountSpec() *specs.Spec {
	return &specs.Spec{
		Root: &specs.Root{},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc"},
			{Destination: "/sys", Type: "sysfs", Options: []string{"ro"}},
			{Destination: "/data", Type: "bind", Options: []string{"rbind", "rprivate", "ro"}},
			{Destination: "/rw", Type: "bind", Options: []string{"rbind", "rslave", "rw", "nosuid", "nodev"}},
		},
		Linux: &specs.Linux{ReadonlyPaths: []string{"/proc/sys"}, MaskedPaths: []string{"/proc/nonexistent-mask", "/proc/kcore", "/proc/acpi"}},
	}
}

func entry(id, parent uint32, mp string, typ mnt.Fstype, root string, flags uint32, ext string) *mnt.MntEntry {
	m := &mnt.MntEntry{MntId: proto.Uint32(id), ParentMntId: proto.Uint32(parent), Mountpoint: proto.String(mp),
		Fstype: proto.Uint32(uint32(typ)), Root: proto.String(root), Flags: proto.Uint32(flags)}
	if ext != "" {
		m.ExtKey = proto.String(ext)
	}
	return m
}

func genuineMounts() []*mnt.MntEntry {
	return []*mnt.MntEntry{
		entry(1, 0, "/", mnt.Fstype_OVERLAYFS, "/", 0, ""),
		entry(2, 1, "/proc", mnt.Fstype_PROC, "/", 0, ""),
		entry(3, 2, "/proc/sys", mnt.Fstype_PROC, "/sys", 1, ""),
		entry(4, 1, "/sys", mnt.Fstype_SYSFS, "/", 1, ""),
		entry(5, 1, "/data", mnt.Fstype_UNSUPPORTED, "/host/data", 1, "/data"),
		entry(6, 1, "/rw", mnt.Fstype_UNSUPPORTED, "/host/rw", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "/rw"),
		entry(7, 2, "/proc/kcore", mnt.Fstype_TMPFS, "/null", unix.MS_NOSUID, "/dev/null"),
		entry(8, 2, "/proc/acpi", mnt.Fstype_TMPFS, "/", unix.MS_RDONLY, ""),
	}
}

func TestCheckMountTree(t *testing.T) {
	if err := checkMountTree(genuineMounts(), testMountSpec()); err != nil {
		t.Fatalf("genuine tree: %v", err)
	}
	for name, c := range map[string]struct {
		edit func([]*mnt.MntEntry) []*mnt.MntEntry
		want string
	}{
		"rw /proc/sys": {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[2].Flags = proto.Uint32(0); return ms }, "writable"},
		"rw ro volume": {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[4].Flags = proto.Uint32(0); return ms }, "writable"},
		"unclean path": {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[2].Mountpoint = proto.String("/x/../proc/sys"); return ms }, "clean"},
		"unknown mount": {func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			return append(ms, entry(9, 1, "/mnt", mnt.Fstype_TMPFS, "/", 0, ""))
		}, "does not mount"},
		"wrong type": {func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			ms[1].Fstype = proto.Uint32(uint32(mnt.Fstype_AUTO))
			return ms
		}, "spec allows"},
		"wrong root":   {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[2].Root = proto.String("/"); return ms }, "shows"},
		"wrong parent": {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[2].ParentMntId = proto.Uint32(1); return ms }, "parent"},
		"stacked": {func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			return append(ms, entry(9, 1, "/proc", mnt.Fstype_PROC, "/", 0, ""))
		}, "two mounts"},
		"ro path absent":         {func(ms []*mnt.MntEntry) []*mnt.MntEntry { return append(ms[:2], ms[3:]...) }, "not masked or read-only"},
		"external proc":          {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[1].ExtKey = proto.String("/data"); return ms }, "external mount"},
		"ro volume's key at /rw": {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[5].ExtKey = proto.String("/data"); return ms }, `source of "/data"`},
		"old ext_mount form": {func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			ms[5].ExtKey, ms[5].ExtMount = nil, proto.Bool(true)
			return ms
		}, "old form"},
		"/rw without nodev":        {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[5].Flags = proto.Uint32(unix.MS_NOSUID); return ms }, "lacks nodev"},
		"/rw shared":               {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[5].SharedId = proto.Uint32(7); return ms }, "is shared"},
		"/data a slave":            {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[4].MasterId = proto.Uint32(7); return ms }, "is a slave"},
		"mask with a volume's key": {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[6].ExtKey = proto.String("/rw"); return ms }, `source of "/rw"`},
		"writable mask tmpfs":      {func(ms []*mnt.MntEntry) []*mnt.MntEntry { ms[7].Flags = proto.Uint32(0); return ms }, "writable"},
	} {
		if err := checkMountTree(c.edit(genuineMounts()), testMountSpec()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

func TestCopyBoundedRefusesExpansion(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"a", "b"} {
		_ = tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Size: 600, Mode: 0o644})
		_, _ = tw.Write(bytes.Repeat([]byte("x"), 600))
	}
	_ = tw.Close()
	if err := copyBounded(io.Discard, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatalf("within its size: %v", err)
	}
	if err := copyBounded(io.Discard, bytes.NewReader(buf.Bytes()), 1000); !errors.Is(err, errExpands) {
		t.Fatalf("1200 bytes of entries against a limit of 1000: %v", err)
	}
}
