package integration

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// counterScript counts every 100 ms to its log and to /count; it writes
// /written and deletes /etc/group first (the rootfs changes that move).
const counterScript = `echo data > /written; rm /etc/group; i=0; while true; do echo $i; echo $i > /count; i=$((i+1)); sleep 0.1; done`

// firstCount is the first number the counter logged.
func firstCount(t *testing.T, path string) int {
	t.Helper()
	for _, l := range readLog(t, path) {
		if v, err := strconv.Atoi(l.content); err == nil {
			return v
		}
	}
	return -1
}

func (i *instance) execOut(t *testing.T, id string, cmd ...string) string {
	t.Helper()
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 20})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return strings.TrimSpace(string(res.Stdout)) + strings.TrimSpace(string(res.Stderr))
}

// TestRestoreContainerFromArchive restores a checkpointed counter into
// another pod: it goes on counting from where the checkpoint caught it,
// with its rootfs changes, into its new log, as the new pod monitor's child.
func TestRestoreContainerFromArchive(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "ckpt-src", ctrConfig("counter", counterScript), "5")
	before, after := src.before, src.after

	podB, cfgB := i.podWithLogs(t, "ckpt-dst")
	_, infB := i.status(t, podB)
	// The process comes from the archive, not from the command.
	id := i.create(t, podB, cfgB, restoring(ctrConfig("counter", "exit 3"), src.archive))
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("restored container after create: %v", st.State)
	}
	start := time.Now()
	i.startCtr(t, id)
	t.Logf("restore (StartContainer) took %s", time.Since(start).Round(time.Millisecond))
	st := i.ctrStatus(t, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("restored container after start: %v", st.State)
	}
	if !strings.Contains(st.ImageRef, "sha256:") || st.Image.GetImage() == src.archive {
		t.Errorf("restored container's image: %q (ref %q), want the checkpointed image", st.Image.GetImage(), st.ImageRef)
	}
	waitLog(t, st.LogPath, strconv.Itoa(after+5), 15*time.Second)
	if first := firstCount(t, st.LogPath); first < before || first > after+1 {
		t.Errorf("restored counter's first line is %d; the checkpoint was taken between %d and %d", first, before, after)
	}
	if pid := i.ctrPID(t, id); ppid(t, pid) != infB.MonitorPID {
		t.Errorf("restored init %d has parent %d, want the pod's monitor %d", pid, ppid(t, pid), infB.MonitorPID)
	}
	if got := i.execOut(t, id, "cat", "/written"); got != "data" {
		t.Errorf("/written in the restored container: %q", got)
	}
	if got := i.execOut(t, id, "sh", "-c", "test -e /etc/group && echo present || echo gone"); got != "gone" {
		t.Errorf("/etc/group in the restored container: %s", got)
	}
	if n, err := strconv.Atoi(i.execOut(t, id, "cat", "/count")); err != nil || n < after {
		t.Errorf("/count in the restored container: %d %v", n, err)
	}
	// Stop and exit work as for any container: the stop signal reaches it
	// (in the pod's PID namespace, sh is not PID 1, so SIGTERM ends it: 143,
	// as TestContainerLifecycleLogsAndLeaks's; 137 meant the SIGTERM was never sent).
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if st := i.waitExited(t, id, 10*time.Second); st.ExitCode != 143 {
		t.Errorf("restored container exit code %d, want 143 (SIGTERM)", st.ExitCode)
	}
	i.stopRemove(t, podB)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// writeTar writes a tar archive of name -> content.
func writeTar(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), Typeflag: tar.TypeReg})
		tw.Write([]byte(content))
	}
	tw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRejectsBadArchives: a missing, corrupt, foreign or escaping
// archive is refused with a clear code and leaves no container behind.
func TestRestoreRejectsBadArchives(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod, cfgPod := i.podWithLogs(t, "badckpt")
	_, inf := i.status(t, pod)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.tar")
	os.WriteFile(garbage, bytes.Repeat([]byte("not a tar "), 1000), 0o600)
	foreign := filepath.Join(dir, "foreign.tar")
	writeTar(t, foreign, map[string]string{
		"config.dump":              `{"id":"x","name":"x","runtime":"runc","rootfsImageRef":"sha256:00"}`,
		"checkpoint/inventory.img": "x",
	})
	oldFormat := filepath.Join(dir, "old.tar")
	writeTar(t, oldFormat, map[string]string{
		"config.dump":              `{"id":"x","name":"x","runtime":"minicri (libcontainer)","rootfsImageRef":"sha256:00","minicriCheckpointFormat":99}`,
		"checkpoint/inventory.img": "x",
	})
	ref := i.pull(t, busybox)
	escaping := filepath.Join(dir, "escape.tar")
	writeTar(t, escaping, map[string]string{
		"config.dump":              fmt.Sprintf(`{"id":"x","name":"x","runtime":"minicri (libcontainer)","rootfsImageRef":%q,"minicriCheckpointFormat":1}`, ref),
		"checkpoint/inventory.img": "x",
		"deleted.files":            `["/../../../../escaped"]`,
	})
	for _, c := range []struct {
		path string
		want codes.Code
	}{
		{filepath.Join(dir, "missing.tar"), codes.InvalidArgument},
		{garbage, codes.InvalidArgument},
		{foreign, codes.FailedPrecondition},
		{oldFormat, codes.FailedPrecondition},
		{escaping, codes.InvalidArgument},
	} {
		_, err := i.tryCreate(t, ctx(t), pod, cfgPod, restoring(ctrConfig("bad", "true"), c.path))
		if status.Code(err) != c.want {
			t.Errorf("restore from %s: %v, want %v", filepath.Base(c.path), err, c.want)
		}
	}
	resp, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
	if err != nil || len(resp.Containers) != 0 {
		t.Errorf("containers after failed restores: %v %v", resp.GetContainers(), err)
	}
	for _, d := range []string{"root/containers", "state/containers"} {
		if ents, _ := os.ReadDir(filepath.Join(i.dir, d)); len(ents) != 0 {
			t.Errorf("%s holds %d entries after failed restores", d, len(ents))
		}
	}
	if _, err := os.Stat("/escaped"); err == nil {
		t.Errorf("deleted.files escaped the rootfs")
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{pod: inf})
}

// TestRestoreRefusesMorePrivilegedCheckpoint: CRIU restores a process's
// capabilities from the archive, not from the spec; a checkpoint of a
// process with CAP_NET_ADMIN is refused in a container without it, and
// restores where it is allowed.
func TestRestoreRefusesMorePrivilegedCheckpoint(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	privileged := ctrConfig("counter", counterScript)
	privileged.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}},
	}
	src := i.checkpointSource(t, "ckpt-caps", privileged, "3")

	podB, cfgB := i.podWithLogs(t, "ckpt-caps-dst")
	_, infB := i.status(t, podB)
	_, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(ctrConfig("counter", "true"), src.archive))
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "capabilities") {
		t.Errorf("restore of a NET_ADMIN process into a container without it: %v, want FailedPrecondition", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(i.dir, "state", "containers")); len(ents) != 0 {
		t.Errorf("refused restore left %d container state dirs", len(ents))
	}
	id := i.run(t, podB, cfgB, restoring(privileged, src.archive))
	// It counts on from where it was frozen (past 5 if the checkpoint was slow).
	waitLog(t, i.ctrStatus(t, id).LogPath, strconv.Itoa(src.after+3), 10*time.Second)
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// TestRestoreFromCheckpointImage restores from a checkpoint packaged as an
// OCI image the way checkpointctl/buildah do (one layer: the archive's
// files; the io.kubernetes.cri-o.annotations.checkpoint.name manifest
// annotation), pulled from a registry.
func TestRestoreFromCheckpointImage(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "ckpt-img", ctrConfig("counter", counterScript), "5")

	img, err := fixture.CheckpointImage(src.archive, "counter")
	if err != nil {
		t.Fatal(err)
	}
	ref := "registry.k8s.io/minicri-it/checkpoint-counter:" + strconv.Itoa(os.Getpid())
	registryURL(t)
	if err := registry.srv.Push(ref, img); err != nil {
		t.Fatal(err)
	}
	i.pull(t, ref)

	podB, cfgB := i.podWithLogs(t, "ckpt-img-dst")
	_, infB := i.status(t, podB)
	id := i.run(t, podB, cfgB, restoring(ctrConfig("counter", "exit 3"), ref))
	path := i.ctrStatus(t, id).LogPath
	waitLog(t, path, strconv.Itoa(src.after+5), 15*time.Second)
	if first := firstCount(t, path); first < 1 || first > src.after+1 {
		t.Errorf("restored counter's first line is %d; the checkpoint was taken at or before %d", first, src.after)
	}
	if got := i.execOut(t, id, "cat", "/written"); got != "data" {
		t.Errorf("/written in the restored container: %q", got)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}
