package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// usernsHostID is the first host ID of the test pods' user namespace.
const usernsHostID = 1_200_000

func usernsPodConfig(name string, mode runtimeapi.NamespaceMode, uids []*runtimeapi.IDMapping) *runtimeapi.PodSandboxConfig {
	cfg := podConfig(name)
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
		UsernsOptions: &runtimeapi.UserNamespace{Mode: mode, Uids: uids, Gids: uids},
	}}
	return cfg
}

func mapping(container, host, length uint32) []*runtimeapi.IDMapping {
	return []*runtimeapi.IDMapping{{ContainerId: container, HostId: host, Length: length}}
}

func TestUserNamespacePod(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := usernsPodConfig("userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "userns")
	podID := i.runPod(t, pod)
	st, podInf := i.status(t, podID)
	if u := st.Linux.Namespaces.Options.UsernsOptions; u == nil || u.Mode != runtimeapi.NamespaceMode_POD || u.Uids[0].HostId != usernsHostID {
		t.Fatalf("status does not report the user namespace: %v", u)
	}
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", podInf.PID)); !strings.Contains(string(b), fmt.Sprint(usernsHostID)) {
		t.Fatalf("pause uid_map: %q", b)
	}
	// The pod owns its netns: the netns's owning user namespace is the pod's.
	if owner, pause := nsOwnerInode(t, podInf.NetNS), nsInode(t, podInf.PID, "user"); owner != pause {
		t.Fatalf("netns is owned by user namespace %d, the pod's is %d", owner, pause)
	}
	vol := t.TempDir()
	os.Chmod(vol, 0o777)
	cfg := ctrConfig("userns", "id -u; echo written > /data/f; touch /rootfs-write; sleep 1000")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vol},
		{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: busybox}, Readonly: true}}
	id := i.run(t, podID, pod, cfg)
	lines := waitLog(t, i.ctrStatus(t, id).LogPath, "0", 10*time.Second)
	if lines[0].content != "0" {
		t.Fatalf("inside, the container is not root: %v", lines)
	}
	var info struct{ Pid int }
	resp, _ := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	jsonUnmarshal(t, resp.Info["info"], &info)
	if uid := procUID(t, info.Pid); uid != usernsHostID {
		t.Fatalf("outside, the container runs as uid %d, want %d", uid, usernsHostID)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var fst syscall.Stat_t
		if err := syscall.Stat(filepath.Join(vol, "f"), &fst); err == nil {
			if fst.Uid != usernsHostID {
				t.Fatalf("file written in the volume is owned by %d on the host, want %d", fst.Uid, usernsHostID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the container never wrote its volume")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The rootfs is an idmapped mount: container root may write it, and
	// nothing under the image's layers was chowned.
	// So is an image volume.
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "stat -c '%u %n' /rootfs-write /bin/busybox /img/bin/busybox"}, Timeout: 10})
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "0 /rootfs-write\n0 /bin/busybox\n0 /img/bin/busybox\n" {
		t.Fatalf("ownership inside: %q %q %v", res.GetStdout(), res.GetStderr(), err)
	}
	i.kill9()
	i.start()
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after a daemon restart: %v", st.State)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

func TestUserNamespaceRejectedVariants(t *testing.T) {
	i := newInstance(t)
	cases := map[string]*runtimeapi.PodSandboxConfig{
		"two mappings": usernsPodConfig("u2", runtimeapi.NamespaceMode_POD,
			append(mapping(0, usernsHostID, 1000), mapping(0, usernsHostID+2000, 1000)...)),
		"id 0 unmapped": usernsPodConfig("u3", runtimeapi.NamespaceMode_POD, mapping(1, usernsHostID, 1000)),
		"CONTAINER":     usernsPodConfig("u4", runtimeapi.NamespaceMode_CONTAINER, nil),
		"TARGET":        usernsPodConfig("u5", runtimeapi.NamespaceMode_TARGET, nil),
	}
	for name, cfg := range cases {
		_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "sandboxes")); len(entries) != 0 {
		t.Fatalf("rejected pods left records: %v", entries)
	}
	node := i.runPod(t, usernsPodConfig("unode", runtimeapi.NamespaceMode_NODE, nil))
	_, info := i.status(t, node)
	if nsInode(t, info.PID, "user") != nsInode(t, i.cmd.Process.Pid, "user") {
		t.Fatal("mode NODE must keep the host's user namespace")
	}
}

// nsOwnerInode returns the inode of the user namespace owning the
// namespace file at path (ioctl NS_GET_USERNS).
func nsOwnerInode(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const nsGetUserns = 0xb701
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nsGetUserns, 0)
	if errno != 0 {
		t.Fatalf("NS_GET_USERNS: %v", errno)
	}
	defer unix.Close(int(fd))
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// procUID reads the real UID of pid as the host sees it.
func procUID(t *testing.T, pid int) uint32 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			var uid uint32
			fmt.Sscan(f[1], &uid)
			return uid
		}
	}
	t.Fatal("no Uid line")
	return 0
}
