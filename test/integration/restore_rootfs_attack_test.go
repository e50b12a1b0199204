package integration

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/creds"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRestoreAttackRootfsDiff: rootfs-diff.tar becomes the restored
// container's writable layer, unpacked by root. An archive for a uid 1000
// no_new_privs container (its tasks edited to uid 1000 without
// capabilities, so the credential checks pass) whose diff holds /dev/mem
// (c 1:1, mode 0666), a setuid-root copy of a shell or a file with
// capabilities gives that container what it could never have made
// itself: a device node without CAP_MKNOD, a setuid-root file without
// CAP_CHOWN/CAP_FOWNER, security.capability without CAP_SETFCAP. Each is
// refused (FailedPrecondition naming the file) and leaves nothing.
func TestRestoreAttackRootfsDiff(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "diff-src", sleeper(), "")
	asUser := tamperArchive(t, src.archive, "checkpoint/core-", func(data []byte) []byte {
		return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
			unprivileged(m.(*criucore.CoreEntry).GetThreadCore().GetCreds())
		})
	})
	attacks := map[string]*tar.Header{
		"mem":  {Name: "mem", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 1},
		"sush": {Name: "sush", Typeflag: tar.TypeReg, Mode: 0o4755},
		"capsh": {Name: "capsh", Typeflag: tar.TypeReg, Mode: 0o755, PAXRecords: map[string]string{
			// VFS_CAP_REVISION_2, effective, CAP_SYS_ADMIN permitted
			"SCHILY.xattr.security.capability": "\x01\x00\x00\x02\x00\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		}},
	}
	podB, cfgB := i.podWithLogs(t, "diff-dst")
	_, infB := i.status(t, podB)
	for name, hdr := range attacks {
		tampered := tamperArchive(t, asUser, "rootfs-diff.tar", func(data []byte) []byte { return withTarEntry(t, data, hdr) })
		cfg := inNamespace(ctrConfig("sleeper", "true"), "it")
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 1000}, NoNewPrivs: true,
		}
		id, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(cfg, tampered))
		if err == nil {
			t.Errorf("%s: a uid 1000 no_new_privs container was created with it in its layer", name)
			i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
			continue
		}
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "/"+name) {
			t.Errorf("%s: %v, want FailedPrecondition naming /%s", name, err, name)
		}
		t.Logf("%s: refused: %v", name, err)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// unprivileged makes a task's credentials uid/gid 1000 with no_new_privs
// and no capabilities (its bounding set kept).
func unprivileged(c *creds.CredsEntry) {
	c.Uid, c.Euid, c.Suid, c.Fsuid = proto.Uint32(1000), proto.Uint32(1000), proto.Uint32(1000), proto.Uint32(1000)
	c.Gid, c.Egid, c.Sgid, c.Fsgid = proto.Uint32(1000), proto.Uint32(1000), proto.Uint32(1000), proto.Uint32(1000)
	c.Groups = []uint32{1000}
	c.NoNewPrivs = proto.Uint32(1)
	c.CapPrm, c.CapEff, c.CapInh, c.CapAmb = []uint32{0, 0}, []uint32{0, 0}, []uint32{0, 0}, []uint32{0, 0}
}

// withTarEntry is the tar data with an empty entry hdr added at its end.
func withTarEntry(t *testing.T, data []byte, hdr *tar.Header) []byte {
	t.Helper()
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(data)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
