package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestUserNSDeviceContainerPathIsNotAHostPath: in a pod with its own user
// namespace libcontainer cannot mknod, and binds the host's file at the
// device's *container* path instead of the device it was given. The
// container path is the pod's to choose (a block volume's devicePath), so
// a container got any host file its user namespace could reach by path
// (here a host-only file in place of the device it asked for). The device
// must be the node at its host path, allowed by the device cgroup.
func TestUserNSDeviceContainerPathIsNotAHostPath(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	// A file only the host should see, on a path any user may traverse.
	hostDir, err := os.MkdirTemp("/tmp", "minicri-attack12-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(hostDir, "host-only.txt")
	if err := os.WriteFile(hostFile, []byte("HOST-ONLY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The device the container is given: a fuse node (10:229), which the
	// default device cgroup rules do not allow.
	dev := filepath.Join(t.TempDir(), "fuse")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(10, 229))); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dev, 0o666); err != nil {
		t.Fatal(err)
	}

	pod := usernsPodConfig("devpath", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "devpath")
	podID := i.runPod(t, pod)
	_, info := i.status(t, podID)
	cfg := ctrConfig("dev", `stat -c "%F %t:%T" `+hostFile+`; cat `+hostFile+`
(exec 3<>`+hostFile+`) && echo device-opened || echo device-refused
echo done; sleep 1000`)
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: pod.Linux.SecurityContext.NamespaceOptions}
	cfg.Devices = []*runtimeapi.Device{{HostPath: dev, ContainerPath: hostFile, Permissions: "rw"}}
	id := i.run(t, podID, pod, cfg)
	lines := waitLog(t, i.ctrStatus(t, id).LogPath, "done", 10*time.Second)
	var out []string
	for _, l := range lines {
		out = append(out, l.content)
	}
	got := strings.Join(out, "\n")
	if strings.Contains(got, "HOST-ONLY") {
		t.Errorf("the container read the host's file at its device's container path:\n%s", got)
	}
	for _, want := range []string{"character special file a:e5", "device-opened"} {
		if !strings.Contains(got, want) {
			t.Errorf("the container does not see its device at %s (want %q):\n%s", hostFile, want, got)
		}
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestNoMaskListsIsNoWritableProcSys: a container of a pod without its own
// user namespace, created without masked and read-only paths (as crictl
// and critest create them; the kubelet sends none only for procMount
// Unmasked, which the API allows with hostUsers: false only), must not get
// a writable /proc/sys: root there is host root, and the host runs
// kernel.core_pattern as root. Before the fix, nil meant none everywhere.
func TestNoMaskListsIsNoWritableProcSys(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "nomasks")
	_, info := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("nomasks", "sleep 1000"))
	// kernel.domainname (the pod's UTS namespace: harmless to the host) has
	// core_pattern's permissions: mode 0644, root, no capability needed.
	code, out := i.execIn(t, id, "sh", "-c", "echo evil > /proc/sys/kernel/domainname && echo PROC-SYS-WRITTEN; test -c /proc/keys || echo KEYS-UNMASKED; true")
	if code != 0 || strings.Contains(out, "WRITTEN") || strings.Contains(out, "UNMASKED") {
		t.Errorf("a container without mask lists in a pod without a user namespace: %d %q", code, out)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestCDIHookSeesTheContainerBundle: CDI hooks run as root in the host's
// namespaces and read <bundle>/config.json to find the root they edit
// (NVIDIA's update-ldcache, create-symlinks). The bundle they were told
// was the daemon's working directory: there, either no config.json (GPU
// containers fail) or one that names any root on the host.
func TestCDIHookSeesTheContainerBundle(t *testing.T) {
	c := newCDIInstance(t)
	c.writeSpec(t, "hook.json", cdiSpec(cdiDevice("hooked", map[string]any{
		"hooks": []map[string]any{c.hook("createRuntime")},
	})))
	podID, pod := c.podWithLogs(t, "cdibundle")
	_, podInf := c.status(t, podID)
	cfg := ctrConfig("bundle", "sleep 1000")
	cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: "minicri.test/dev=hooked"}}
	id := c.run(t, podID, pod, cfg)
	c.hookSaw(t, "createRuntime", id)
	b, err := os.ReadFile(filepath.Join(c.host, "hooks", "createRuntime"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct{ Bundle string }
	jsonUnmarshal(t, string(b), &state)
	var spec struct{ Root struct{ Path string } }
	data, err := os.ReadFile(filepath.Join(state.Bundle, "config.json"))
	if err != nil {
		t.Fatalf("the hooks' bundle %q has no config.json: %v", state.Bundle, err)
	}
	jsonUnmarshal(t, string(data), &spec)
	if !strings.Contains(spec.Root.Path, id) {
		t.Errorf("the hooks' bundle %q names root %q, not container %s's", state.Bundle, spec.Root.Path, id)
	}
	c.stopRemove(t, podID)
	c.assertCtrGone(t, id)
	c.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}
