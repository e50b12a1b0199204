package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/cgroup"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/creds"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/mnt"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
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

// sleeper is a container of namespace "it" that sleeps and logs nothing.
func sleeper() *runtimeapi.ContainerConfig {
	return inNamespace(ctrConfig("sleeper", `while true; do sleep 1; done`), "it")
}

// TestRestoreAttackOtherTenantsArchive: the kubelet writes every pod's
// checkpoint under /var/lib/kubelet/checkpoints; a tenant naming another
// namespace's archive as its image would get that pod's memory and files.
// The archive records its pod's namespace; a restore into another
// namespace is refused (PermissionDenied) and leaves nothing.
func TestRestoreAttackOtherTenantsArchive(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	victim := i.checkpointSource(t, "victim", inNamespace(ctrConfig("secret", `echo hunter2 > /secret; while true; do sleep 1; done`), "victim"), "")

	pod, cfgPod := i.podWithLogs(t, "thief")
	_, inf := i.status(t, pod)
	stolen, err := i.tryCreate(t, ctx(t), pod, cfgPod, restoring(inNamespace(ctrConfig("thief", "true"), "attacker"), victim.archive))
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("restore of another namespace's checkpoint: %v (container %q), want PermissionDenied", err, stolen)
	}
	// The same namespace restores it (the legitimate use).
	id := i.run(t, pod, cfgPod, restoring(inNamespace(ctrConfig("owner", "true"), "victim"), victim.archive))
	if got := i.execOut(t, id, "cat", "/secret"); got != "hunter2" {
		t.Errorf("same-namespace restore: /secret is %q", got)
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{victim.pod: victim.inf, pod: inf})
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
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err := i.tryCreate(t, c, pod, cfgPod, restoring(inNamespace(ctrConfig("hostpath", "true"), "it"), path))
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
		_, err := i.tryCreate(t, ctx(t), pod, cfgPod, restoring(inNamespace(ctrConfig("bomb", "true"), "it"), path))
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

// TestRestoreAttackMountImage: CRIU rebuilds the container's mount tree
// from mountpoints-*.img, whatever the spec says. An archive whose image
// leaves /proc/sys writable (a root container then writes
// kernel.core_pattern: the host), drops a masked path, stacks a second
// procfs over the masks, shows /proc/sys's contents at /proc, or adds a
// mount the spec has none of (binfmt_misc) is refused: FailedPrecondition.
func TestRestoreAttackMountImage(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "mnt-src", sleeper(), "")
	at := func(ms []*mnt.MntEntry, mp string) *mnt.MntEntry {
		for _, m := range ms {
			if m.GetMountpoint() == mp {
				return m
			}
		}
		t.Fatalf("no mount at %s in the checkpoint", mp)
		return nil
	}
	procfs := func(ms []*mnt.MntEntry, mp, root string) *mnt.MntEntry {
		m := proto.Clone(at(ms, "/proc")).(*mnt.MntEntry)
		m.MntId, m.Mountpoint, m.Root = proto.Uint32(9999), proto.String(mp), proto.String(root)
		return m
	}
	attacks := map[string]func([]*mnt.MntEntry) []*mnt.MntEntry{
		"rw /proc/sys": func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			m := at(ms, "/proc/sys")
			m.Flags = proto.Uint32(m.GetFlags() &^ unix.MS_RDONLY)
			return ms
		},
		"unmasked /proc/keys": func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			return slices.DeleteFunc(ms, func(m *mnt.MntEntry) bool { return m.GetMountpoint() == "/proc/keys" })
		},
		"procfs over the masks": func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			return append(ms, procfs(ms, "/proc", "/"))
		},
		"/proc/sys at /proc": func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			at(ms, "/proc").Root = proto.String("/sys")
			return ms
		},
		"binfmt_misc": func(ms []*mnt.MntEntry) []*mnt.MntEntry {
			m := procfs(ms, "/mnt", "/")
			m.Fstype, m.Source, m.Flags = proto.Uint32(uint32(mnt.Fstype_BINFMT_MISC)), proto.String("binfmt_misc"), proto.Uint32(0)
			return append(ms, m)
		},
	}
	podB, cfgB := i.podWithLogs(t, "mnt-dst")
	_, infB := i.status(t, podB)
	for name, attack := range attacks {
		tampered := tamperArchive(t, src.archive, "checkpoint/mountpoints-", func(data []byte) []byte {
			return editMounts(t, data, attack)
		})
		id, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(inNamespace(ctrConfig("sleeper", "true"), "it"), tampered))
		if err != nil {
			if c := status.Code(err); c != codes.FailedPrecondition {
				t.Errorf("%s: %v, want FailedPrecondition", name, err)
			}
			t.Logf("%s: refused: %v", name, err)
			continue
		}
		t.Errorf("%s: a checkpoint with this mount image was accepted", name)
		if name == "rw /proc/sys" {
			if _, err := i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: id}); err == nil {
				for _, l := range strings.Split(i.execOut(t, id, "cat", "/proc/self/mountinfo"), "\n") {
					if f := strings.Fields(l); len(f) > 5 && f[4] == "/proc/sys" && strings.HasPrefix(f[5], "rw") {
						t.Errorf("restored container has /proc/sys writable: %s", l)
					}
				}
			}
		}
		i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id})
		i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// TestRestoreAttackCgroupImage: CRIU puts the restored tasks in the
// cgroups cgroup.img names, joined to its own mount of each hierarchy. A
// path with ".." climbs out of that mount into the host's file system:
// "/../../sys/fs/cgroup/memory" is the host's root cgroup (no memory or
// pids limit, and with cgroup v1 every device), and CRIU writes there as
// root. The image's cgroups are ignored: the task stays in the
// container's.
func TestRestoreAttackCgroupImage(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "cg-src", sleeper(), "")
	tampered := tamperArchive(t, src.archive, "checkpoint/cgroup.img", func(data []byte) []byte {
		return editImage(t, data, &cgroup.CgroupEntry{}, func(m proto.Message) {
			for _, set := range m.(*cgroup.CgroupEntry).GetSets() {
				for _, c := range set.GetCtls() {
					// Out of CRIU's cgroup yard, down the host's
					// /sys/fs/cgroup into the test instance's parent
					// cgroup (not the host's root: the test touches only
					// cgroups it made); an attacker would name "/".
					dir := map[string]string{"": "unified", "name=systemd": "systemd"}[c.GetName()]
					if dir == "" {
						dir = c.GetName()
					}
					c.Path = proto.String(strings.Repeat("/..", 20) + "/sys/fs/cgroup/" + dir + filepath.Dir(c.GetPath()))
				}
			}
		})
	})
	podB, cfgB := i.podWithLogs(t, "cg-dst")
	_, infB := i.status(t, podB)
	// The genuine archive restores into the new container's cgroups.
	gid := i.run(t, podB, cfgB, restoring(inNamespace(ctrConfig("genuine", "true"), "it"), src.archive))
	for _, l := range restoredCgroups(t, i, gid) {
		if !strings.Contains(l, gid) {
			t.Errorf("restored task of the genuine archive is not in its container's cgroup: %s", l)
		}
	}
	// The tampered archive's task takes the same pid in the pod.
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: gid}); err != nil {
		t.Fatal(err)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: gid}); err != nil {
		t.Fatal(err)
	}
	// Refused, or restored into the container's own cgroups (minicri has
	// CRIU ignore the image's cgroups): never elsewhere.
	id, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(inNamespace(ctrConfig("sleeper", "true"), "it"), tampered))
	if err == nil {
		if _, err = i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: id}); err == nil {
			for _, l := range restoredCgroups(t, i, id) {
				if !strings.Contains(l, id) {
					t.Errorf("restored task's cgroup is not the container's: %s", l)
				}
			}
		}
	}
	if err != nil && status.Code(err) != codes.FailedPrecondition {
		t.Errorf("tampered cgroup image: %v, want FailedPrecondition or a contained restore", err)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// restoredCgroups are the cgroup lines of the restored sleeper: pid 2 of
// the pod's PID namespace, as it was checkpointed (pid 1 is the pause).
func restoredCgroups(t *testing.T, i *instance, id string) []string {
	t.Helper()
	out := i.execOut(t, id, "sh", "-c", "cat /proc/2/cmdline; echo; cat /proc/2/cgroup")
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "while") {
		t.Fatalf("pid 2 is not the restored sleeper: %q", out)
	}
	return lines[1:]
}

// TestRestoreAttackCredsToRoot: CRIU restores uids, gids, groups and
// capabilities from core-*.img. A container running as uid 1000 with
// no_new_privs can never become root nor join a group (no setuid binary
// helps it); an archive whose tasks are uid 0 with the default capabilities
// (all within the bounding set, CAP_SETUID included) or in group 6 (disk)
// would restore so into it. Refused. (The source runs as root: CRIU cannot
// dump another user's task here, root lacking CAP_SYS_RESOURCE.)
func TestRestoreAttackCredsToRoot(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "creds-src", sleeper(), "")
	nonRoot := func(cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 1000}, NoNewPrivs: true,
		}
		return inNamespace(cfg, "it")
	}
	ids := func(c *creds.CredsEntry, uid, gid uint32) {
		c.Uid, c.Euid, c.Suid, c.Fsuid = proto.Uint32(uid), proto.Uint32(uid), proto.Uint32(uid), proto.Uint32(uid)
		c.Gid, c.Egid, c.Sgid, c.Fsgid = proto.Uint32(gid), proto.Uint32(gid), proto.Uint32(gid), proto.Uint32(gid)
		c.NoNewPrivs = proto.Uint32(1)
	}
	attacks := map[string]func(*creds.CredsEntry){
		"uid 0 with capabilities": func(c *creds.CredsEntry) {
			ids(c, 0, 0)
			c.Groups = []uint32{1000}
			c.CapPrm, c.CapEff = c.GetCapBnd(), c.GetCapBnd()
		},
		"group disk": func(c *creds.CredsEntry) {
			ids(c, 1000, 1000)
			c.Groups = []uint32{1000, 6}
			c.CapPrm, c.CapEff, c.CapInh, c.CapAmb = []uint32{0, 0}, []uint32{0, 0}, []uint32{0, 0}, []uint32{0, 0}
		},
	}
	podB, cfgB := i.podWithLogs(t, "creds-dst")
	_, infB := i.status(t, podB)
	for name, attack := range attacks {
		tampered := tamperArchive(t, src.archive, "checkpoint/core-", func(data []byte) []byte {
			return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
				attack(m.(*criucore.CoreEntry).GetThreadCore().GetCreds())
			})
		})
		id, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(nonRoot(ctrConfig("sleeper", "true")), tampered))
		if err == nil {
			t.Errorf("%s: a non-root no_new_privs container was restored from it", name)
			i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
		} else if status.Code(err) != codes.FailedPrecondition {
			t.Errorf("%s: %v, want FailedPrecondition", name, err)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
	// The genuine archive restores (as root, as it was taken).
	i.run(t, podB, cfgB, restoring(inNamespace(ctrConfig("sleeper", "true"), "it"), src.archive))
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}
