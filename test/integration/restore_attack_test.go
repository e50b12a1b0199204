package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The attacker of these tests is a tenant who can create pods (any string
// in the image field) or publish checkpoint archives/images; the node is
// the victim. See docs/DESIGN.md, "Restore: threat model".

const nsLabel = "io.kubernetes.pod.namespace"

// inNamespace labels cfg as the kubelet does for a pod of namespace ns.
func inNamespace(cfg *runtimeapi.ContainerConfig, ns string) *runtimeapi.ContainerConfig {
	cfg.Labels = map[string]string{nsLabel: ns, "io.kubernetes.container.name": cfg.Metadata.Name}
	return cfg
}

// TestRestoreAttackOtherTenantsArchive: the kubelet writes every pod's
// checkpoint under /var/lib/kubelet/checkpoints; a tenant naming another
// namespace's archive as its image would get that pod's memory and files.
// The archive records its pod's namespace; a restore into another
// namespace is refused (PermissionDenied) and leaves nothing.
func TestRestoreAttackOtherTenantsArchive(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	victimPod, victimCfg := i.podWithLogs(t, "victim")
	_, infV := i.status(t, victimPod)
	src := i.run(t, victimPod, victimCfg, inNamespace(ctrConfig("secret", `echo hunter2 > /secret; while true; do sleep 1; done`), "victim"))
	time.Sleep(300 * time.Millisecond)
	archive := filepath.Join(t.TempDir(), "checkpoint-victim.tar")
	if _, err := i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{ContainerId: src, Location: archive}); err != nil {
		t.Fatalf("CheckpointContainer: %v", err)
	}
	i.stopRemove(t, victimPod)

	pod, cfgPod := i.podWithLogs(t, "thief")
	_, inf := i.status(t, pod)
	cfg := inNamespace(ctrConfig("thief", "true"), "attacker")
	cfg.Image.Image = archive
	resp, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg, SandboxConfig: cfgPod})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("restore of another namespace's checkpoint: %v (container %q), want PermissionDenied", err, resp.GetContainerId())
	}
	// The same namespace restores it (the legitimate use).
	own := inNamespace(ctrConfig("owner", "true"), "victim")
	own.Image.Image = archive
	id := i.create(t, pod, cfgPod, own)
	i.startCtr(t, id)
	if got := i.execOut(t, id, "cat", "/secret"); got != "hunter2" {
		t.Errorf("same-namespace restore: /secret is %q", got)
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{victimPod: infV, pod: inf})
}

// TestRestoreAttackHostPaths: the image field names host files that are
// not archives: a FIFO (opening it would block the daemon for ever), a
// device, a symlink to an archive, a directory. Each is InvalidArgument,
// at once, and nothing is left.
func TestRestoreAttackHostPaths(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod, cfgPod := i.podWithLogs(t, "hostpaths")
	_, inf := i.status(t, pod)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.tar")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.tar")
	writeTar(t, filepath.Join(dir, "real.tar"), map[string]string{"config.dump": "{}"})
	if err := os.Symlink(filepath.Join(dir, "real.tar"), link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", link, dir, "/etc/shadow"} {
		cfg := inNamespace(ctrConfig("hostpath", "true"), "it")
		cfg.Image.Image = path
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err := i.rt.CreateContainer(c, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg, SandboxConfig: cfgPod})
		cancel()
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("restore from %s: %v after %s, want InvalidArgument", path, err, time.Since(start).Round(time.Millisecond))
		}
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{pod: inf})
}

// TestRestoreAttackSparseBombs: a few-KB archive whose tar headers declare
// sparse files of hundreds of MB (in rootfs-diff.tar, or as a CRIU image)
// would be written out in full (zeros) into the container's layer or the
// state directory: disk exhaustion from a tiny input. Refused before
// anything large is written.
func TestRestoreAttackSparseBombs(t *testing.T) {
	i := newInstance(t, withRegistry())
	ref := i.pull(t, busybox)
	pod, cfgPod := i.podWithLogs(t, "bomb")
	_, inf := i.status(t, pod)
	const bomb = 256 << 20
	meta := fmt.Sprintf(`{"id":"x","name":"x","runtime":"minicri (libcontainer)","rootfsImageRef":%q,"minicriCheckpointFormat":1,"podNamespace":"it"}`, ref)

	// rootfs-diff.tar holds a sparse file.
	inner := t.TempDir()
	sparse(t, filepath.Join(inner, "zeros"), bomb)
	a := t.TempDir()
	gnuTar(t, filepath.Join(a, "rootfs-diff.tar"), inner, "zeros")
	mkArchiveDir(t, a, meta)
	rootfsBomb := filepath.Join(t.TempDir(), "rootfs-bomb.tar")
	gnuTar(t, rootfsBomb, a, "config.dump", "checkpoint", "rootfs-diff.tar")

	// A CRIU image is a sparse file in the archive itself.
	b := t.TempDir()
	mkArchiveDir(t, b, meta)
	sparse(t, filepath.Join(b, "checkpoint", "pages-1.img"), bomb)
	imagesBomb := filepath.Join(t.TempDir(), "images-bomb.tar")
	gnuTar(t, imagesBomb, b, "config.dump", "checkpoint")

	for _, path := range []string{rootfsBomb, imagesBomb} {
		if fi, err := os.Stat(path); err != nil || fi.Size() > 1<<20 {
			t.Fatalf("bomb %s: %v (size %d)", path, err, fi.Size())
		}
		cfg := inNamespace(ctrConfig("bomb", "true"), "it")
		cfg.Image.Image = path
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg, SandboxConfig: cfgPod})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "more than") {
			t.Errorf("restore from %s: %v, want InvalidArgument: expands to more than the archive holds", filepath.Base(path), err)
		}
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{pod: inf})
}

func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("x"), size-1); err != nil {
		t.Fatal(err)
	}
}

// mkArchiveDir writes config.dump and a stub CRIU inventory in dir.
func mkArchiveDir(t *testing.T, dir, meta string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "checkpoint"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.dump"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "checkpoint", "inventory.img"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// gnuTar archives names of dir with GNU tar's sparse encoding.
func gnuTar(t *testing.T, out, dir string, names ...string) {
	t.Helper()
	args := append([]string{"--sparse", "--format=posix", "-cf", out, "-C", dir}, names...)
	if b, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, b)
	}
}
