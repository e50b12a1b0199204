package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRestorePodAttackCheckpointPath: RestorePod's checkpoint_path is the
// caller's. A pod.json that is a FIFO blocked the call for ever (a device
// would be read without end); a symlinked pod.json was followed to
// another directory's; and the errors told a missing path from a file
// from a directory (ENOENT, ENOTDIR, ...): a probe of the host's files.
// Each is InvalidArgument at once, with one message whatever the path is.
func TestRestorePodAttackCheckpointPath(t *testing.T) {
	i := newInstance(t, withRegistry())
	dir := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	fifo, link, real := mk("fifo"), mk("link"), mk("real")
	if err := unix.Mkfifo(filepath.Join(fifo, "pod.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "pod.json"), []byte(`{"minicriPodCheckpointFormat":1,"runtime":"minicri"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "pod.json"), filepath.Join(link, "pod.json")); err != nil {
		t.Fatal(err)
	}
	messages := map[string]string{}
	for _, path := range []string{fifo, link, filepath.Join(dir, "missing"), "/etc/hostname", "/etc", filepath.Join(real, "pod.json")} {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		_, err := i.rt.RestorePod(c, &runtimeapi.RestorePodRequest{
			CheckpointPath: path, Config: podConfig("probe"), ContainerConfigs: []*runtimeapi.ContainerConfig{ctrConfig("x", "true")},
		})
		cancel()
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("RestorePod from %s: %v after %s, want InvalidArgument", path, err, time.Since(start).Round(time.Millisecond))
			if path == fifo { // unblock the daemon's read
				if fd, err := unix.Open(filepath.Join(fifo, "pod.json"), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					unix.Close(fd)
				}
			}
			continue
		}
		messages[strings.ReplaceAll(status.Convert(err).Message(), path, "PATH")] += " " + path
	}
	if len(messages) > 1 {
		t.Errorf("the errors tell the paths apart: %v", messages)
	}
}

// TestRestoreAttackProbeHostPaths: a CreateContainer whose image is a
// host path told a missing path (ENOENT) from a link (ELOOP), a directory
// or device ("not a regular file"), a file that is no tar ("corrupt") and
// a tar without config.dump: a tenant probed which host files exist and
// what they are. Until a checkpoint's config.dump is read, every refusal
// is one InvalidArgument message, whatever the path is.
func TestRestoreAttackProbeHostPaths(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod, cfgPod := i.podWithLogs(t, "probe")
	_, inf := i.status(t, pod)
	dir := t.TempDir()
	link, tarball := filepath.Join(dir, "link"), filepath.Join(dir, "plain.tar")
	if err := os.Symlink("/etc/hostname", link); err != nil {
		t.Fatal(err)
	}
	writeTar(t, tarball, map[string]string{"hello": "x"})
	messages := map[string]string{}
	for _, path := range []string{filepath.Join(dir, "missing"), link, dir, "/dev/null", "/etc/hostname", tarball} {
		_, err := i.tryCreate(t, ctx(t), pod, cfgPod, restoring(inNamespace(ctrConfig("probe", "true"), "it"), path))
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("restore from %s: %v, want InvalidArgument", path, err)
			continue
		}
		messages[strings.ReplaceAll(status.Convert(err).Message(), path, "PATH")] += " " + path
	}
	if len(messages) > 1 {
		t.Errorf("the errors tell the paths apart: %v", messages)
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{pod: inf})
}
