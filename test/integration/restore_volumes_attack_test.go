package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/mnt"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// volumeSleeper is a sleeper with a read-only volume at /ro and a
// read-write nosuid one at /rw, both host directories under dir.
func volumeSleeper(t *testing.T, dir string) *runtimeapi.ContainerConfig {
	t.Helper()
	for _, d := range []string{"ro", "rw"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := sleeper()
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/ro", HostPath: filepath.Join(dir, "ro"), Readonly: true},
		{ContainerPath: "/rw", HostPath: filepath.Join(dir, "rw"), MountOptions: []string{"nosuid"}},
	}
	return cfg
}

// TestRestoreAttackVolumeRemap: CRIU binds an external mount's source by
// the key the image gives it (libcontainer maps each bind's destination
// to its source), at the mount point and with the flags the image gives.
// An archive whose /rw entry carries /ro's key puts the read-only volume
// (a read-only hostPath, a PVC) read-write at /rw; one that drops /rw's
// nosuid, or marks it shared (mounts made in the container would reach
// the host's peers), gives the container more than its spec. Each is
// refused (FailedPrecondition, naming the mount) and leaves nothing; the
// genuine archive restores.
func TestRestoreAttackVolumeRemap(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	vols := t.TempDir()
	src := i.checkpointSource(t, "vol-src", volumeSleeper(t, vols), "")
	rw := func(ms []*mnt.MntEntry) *mnt.MntEntry {
		for _, m := range ms {
			if m.GetMountpoint() == "/rw" {
				return m
			}
		}
		t.Fatalf("no mount at /rw in the checkpoint")
		return nil
	}
	attacks := map[string]func([]*mnt.MntEntry) []*mnt.MntEntry{
		"/ro's key at /rw": func(ms []*mnt.MntEntry) []*mnt.MntEntry { rw(ms).ExtKey = proto.String("/ro"); return ms },
		"/rw without nosuid": func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			m := rw(ms)
			m.Flags = proto.Uint32(m.GetFlags() &^ unix.MS_NOSUID)
			return ms
		},
		"/rw shared": func(ms []*mnt.MntEntry) []*mnt.MntEntry { rw(ms).SharedId = proto.Uint32(4242); return ms },
	}
	podB, cfgB := i.podWithLogs(t, "vol-dst")
	_, infB := i.status(t, podB)
	for name, attack := range attacks {
		tampered := tamperArchive(t, src.archive, "checkpoint/mountpoints-", func(data []byte) []byte {
			return editMounts(t, data, attack)
		})
		id, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(volumeSleeper(t, vols), tampered))
		if err != nil {
			if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "/rw") {
				t.Errorf("%s: %v, want FailedPrecondition naming /rw", name, err)
			}
			t.Logf("%s: refused: %v", name, err)
			continue
		}
		t.Errorf("%s: a checkpoint with this mount image was accepted", name)
		if _, err := i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: id}); err == nil {
			i.showVolumeBreach(t, id, name, vols)
		}
		i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id})
		i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
	}
	// The genuine archive restores, its volumes as the spec has them.
	id := i.run(t, podB, cfgB, restoring(volumeSleeper(t, vols), src.archive))
	if _, code := i.exec(t, id, "touch", "/ro/x"); code == 0 {
		t.Errorf("genuine restore: /ro is writable")
	}
	if out, code := i.exec(t, id, "touch", "/rw/x"); code != 0 {
		t.Errorf("genuine restore: /rw is not writable: %s", out)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// showVolumeBreach reports what an accepted tampered archive gave the
// restored container: a write reaching the read-only volume, /rw's mount.
func (i *instance) showVolumeBreach(t *testing.T, id, name, vols string) {
	t.Helper()
	i.exec(t, id, "touch", "/rw/written")
	if err := os.Remove(filepath.Join(vols, "ro", "written")); err == nil {
		t.Errorf("%s: the restored container wrote into the read-only volume", name)
	}
	_ = os.Remove(filepath.Join(vols, "rw", "written"))
	for _, l := range strings.Split(i.execOut(t, id, "cat", "/proc/self/mountinfo"), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == "/rw" {
			t.Errorf("%s: the restored container's /rw: %s", name, l)
		}
	}
}
