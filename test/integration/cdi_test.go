package integration

import (
	"encoding/json"
	"fmt"
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

// cdiInstance is an instance whose CDI spec directory is specDir (empty
// when the daemon starts); host holds the device nodes, files and hook
// outputs the specs point at.
type cdiInstance struct {
	*instance
	specDir, host string
}

func newCDIInstance(t *testing.T, opts ...option) *cdiInstance {
	t.Helper()
	i := newInstance(t, append([]option{withRegistry()}, opts...)...)
	c := &cdiInstance{instance: i, specDir: filepath.Join(i.dir, "cdi"), host: filepath.Join(i.dir, "cdi-host")}
	for _, d := range []string{c.specDir, c.host, filepath.Join(c.host, "data"), filepath.Join(c.host, "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A /dev/null (1:3) under another name, and a /dev/fuse (10:229): the
	// one device of the two the runtime's default device cgroup rules do
	// not allow, so opening it proves the rule CDI adds.
	for name, dev := range map[string][2]uint32{"null": {1, 3}, "fuse": {10, 229}} {
		p := filepath.Join(c.host, name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(dev[0], dev[1]))); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil { // past the umask, as /dev/null
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.host, "data", "hello.txt"), []byte("from-cdi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Restart the daemon on a config naming the spec dir.
	i.stop()
	f, err := os.OpenFile(filepath.Join(i.dir, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[cdi]\nenable = true\nspec_dirs = [%q]\n", c.specDir)
	f.Close()
	i.start()
	i.pull(t, busybox)
	return c
}

// writeSpec writes a CDI spec (as JSON) the way spec writers do: aside,
// then renamed into the directory.
func (c *cdiInstance) writeSpec(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(c.host, name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.specDir, name)); err != nil {
		t.Fatal(err)
	}
}

func cdiDevice(name string, edits map[string]any) map[string]any {
	return map[string]any{"name": name, "containerEdits": edits}
}

func cdiSpec(devices ...map[string]any) map[string]any {
	return map[string]any{"cdiVersion": "0.6.0", "kind": "minicri.test/dev", "devices": devices}
}

// hook is a hook that saves the OCI state it reads to hooks/<name>.
func (c *cdiInstance) hook(name string) map[string]any {
	return map[string]any{"hookName": name, "path": "/bin/sh",
		"args": []string{"sh", "-c", "cat > " + filepath.Join(c.host, "hooks", name)}}
}

// hookSaw waits for the hook's output and checks it names the container.
func (c *cdiInstance) hookSaw(t *testing.T, name, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(c.host, "hooks", name))
		if err == nil && strings.Contains(string(b), `"id":"`+id+`"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s hook did not run for %s: %q %v", name, id, b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCDIDeviceEnvMountHooks: a spec written after the daemon started
// injects a device node (usable, and allowed by the device cgroup), an
// environment variable, a mount and hooks of every kind that runs.
func TestCDIDeviceEnvMountHooks(t *testing.T) {
	c := newCDIInstance(t)
	c.writeSpec(t, "test.json", cdiSpec(cdiDevice("gpu", map[string]any{
		"env": []string{"CDI_TEST=hello"},
		"deviceNodes": []map[string]any{
			{"path": "/dev/cdi-null", "hostPath": filepath.Join(c.host, "null")},
			{"path": "/dev/cdi-fuse", "hostPath": filepath.Join(c.host, "fuse")},
		},
		"mounts": []map[string]any{{"hostPath": filepath.Join(c.host, "data"), "containerPath": "/cdi-data",
			"options": []string{"ro", "nosuid", "nodev", "bind"}}},
		"hooks": []map[string]any{
			c.hook("createRuntime"), c.hook("createContainer"), c.hook("poststart"), c.hook("poststop"),
			// In the container, before its process.
			{"hookName": "startContainer", "path": "/bin/sh", "args": []string{"sh", "-c", "echo hooked > /tmp/startContainer"}},
		},
	})))
	podID, pod := c.podWithLogs(t, "cdi")
	_, podInf := c.status(t, podID)
	cfg := ctrConfig("cdi", `echo "env=$CDI_TEST"; cat /cdi-data/hello.txt; stat -c "null=%F %t:%T" /dev/cdi-null;
echo x > /dev/cdi-null && echo null-written || echo null-refused
(exec 3<>/dev/cdi-fuse) && echo fuse-opened || echo fuse-refused
echo "start-hook=$(cat /tmp/startContainer)"; echo done; sleep 1000`)
	cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: "minicri.test/dev=gpu"}}
	id := c.create(t, podID, pod, cfg)
	c.hookSaw(t, "createRuntime", id)
	c.hookSaw(t, "createContainer", id)
	c.hookSaw(t, "poststart", id)
	c.startCtr(t, id)
	lines := waitLog(t, c.ctrStatus(t, id).LogPath, "done", 10*time.Second)
	got := map[string]bool{}
	for _, l := range lines {
		got[l.content] = true
	}
	for _, want := range []string{"env=hello", "from-cdi", "null=character special file 1:3", "null-written", "fuse-opened", "start-hook=hooked"} {
		if !got[want] {
			t.Errorf("container did not print %q; it printed %v", want, lines)
		}
	}
	if _, err := c.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	c.hookSaw(t, "poststop", id)
	c.assertCtrGone(t, id)
	c.stopRemove(t, podID)
	c.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// TestCDIBadRequestsFailCleanly: an unknown device fails CreateContainer
// with FailedPrecondition naming it (and works once its spec is written,
// without a restart), a malformed name with InvalidArgument, a spec whose
// device path climbs out of /dev with FailedPrecondition; none leaves
// anything. Devices come from the container's cdi.k8s.io/ annotations too,
// never from the pod's.
func TestCDIBadRequestsFailCleanly(t *testing.T) {
	c := newCDIInstance(t)
	c.writeSpec(t, "bad.json", map[string]any{"cdiVersion": "0.6.0", "kind": "minicri.test/bad", "devices": []map[string]any{
		cdiDevice("escape", map[string]any{"deviceNodes": []map[string]any{
			{"path": "/dev/../../../../" + c.host + "/planted", "hostPath": filepath.Join(c.host, "null")}}}),
	}})
	podID, pod := c.podWithLogs(t, "cdibad")
	_, podInf := c.status(t, podID)
	for _, tc := range []struct {
		device, wantName string
		code             codes.Code
	}{
		{"minicri.test/dev=later", "minicri.test/dev=later", codes.FailedPrecondition},
		{"not-qualified", "not-qualified", codes.InvalidArgument},
		{"minicri.test/bad=escape", "minicri.test/bad=escape", codes.FailedPrecondition},
	} {
		cfg := ctrConfig("bad", "sleep 1000")
		cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: tc.device}}
		_, err := c.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.wantName) {
			t.Fatalf("%s: got %v, want %v naming %s", tc.device, err, tc.code, tc.wantName)
		}
		for _, d := range []string{"root/containers", "state/containers"} {
			if ents, _ := os.ReadDir(filepath.Join(c.dir, d)); len(ents) > 0 {
				t.Fatalf("%s: %s left: %s", tc.device, d, ents[0].Name())
			}
		}
		if ms := mountsUnder(filepath.Join(c.dir, "state", "containers")); len(ms) > 0 {
			t.Fatalf("%s: mount left: %s", tc.device, ms[0])
		}
		resp, err := c.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
		if err != nil || len(resp.Containers) != 0 {
			t.Fatalf("%s: containers listed: %v %v", tc.device, resp.GetContainers(), err)
		}
	}
	if exists(filepath.Join(c.host, "planted")) {
		t.Fatal("the escaping device node was created on the host")
	}

	// The device the first request missed, written now: the same request
	// (the kubelet's retry) succeeds. The container's own annotation asks
	// for another device; the pod's annotation, which a pod's author
	// controls, for a third that must not be injected.
	c.writeSpec(t, "later.json", cdiSpec(
		cdiDevice("later", map[string]any{"env": []string{"CDI_LATER=1"}}),
		cdiDevice("annotated", map[string]any{"env": []string{"CDI_ANNOTATED=1"}}),
		cdiDevice("podwide", map[string]any{"env": []string{"CDI_POD=1"}}),
	))
	pod2 := podConfig("cdiann")
	pod2.LogDirectory = filepath.Join(c.dir, "logs", pod2.Metadata.Name)
	pod2.Annotations = map[string]string{"cdi.k8s.io/pod": "minicri.test/dev=podwide"}
	pod2ID := c.runPod(t, pod2)
	_, pod2Inf := c.status(t, pod2ID)
	cfg := ctrConfig("bad", `echo "later=$CDI_LATER annotated=$CDI_ANNOTATED pod=$CDI_POD"; sleep 1000`)
	cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: "minicri.test/dev=later"}}
	cfg.Annotations = map[string]string{"cdi.k8s.io/minicri.test_annotated": "minicri.test/dev=annotated"}
	id := c.run(t, pod2ID, pod2, cfg)
	waitLog(t, c.ctrStatus(t, id).LogPath, "later=1 annotated=1 pod=", 10*time.Second)

	c.stopRemove(t, podID)
	c.stopRemove(t, pod2ID)
	c.assertNothingLeft(t, map[string]podInfo{podID: podInf, pod2ID: pod2Inf})
}

// TestCDIDeviceInUserNamespacePod: in a pod with its own user namespace
// (no mknod there), a CDI device node whose host path is not its container
// path still shows the right device, usable, allowed by the device cgroup.
func TestCDIDeviceInUserNamespacePod(t *testing.T) {
	c := newCDIInstance(t)
	c.writeSpec(t, "test.json", cdiSpec(cdiDevice("gpu", map[string]any{
		"env": []string{"CDI_TEST=userns"},
		"deviceNodes": []map[string]any{
			{"path": "/dev/cdi-null", "hostPath": filepath.Join(c.host, "null")},
			{"path": "/dev/cdi-fuse", "hostPath": filepath.Join(c.host, "fuse")},
		},
	})))
	pod := usernsPodConfig("cdiuserns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(c.dir, "logs", pod.Metadata.Name)
	podID := c.runPod(t, pod)
	_, podInf := c.status(t, podID)
	cfg := ctrConfig("cdi", `echo "env=$CDI_TEST"; stat -c "null=%F %t:%T" /dev/cdi-null
echo x > /dev/cdi-null && echo null-written || echo null-refused
(exec 3<>/dev/cdi-fuse) && echo fuse-opened || echo fuse-refused
echo done; sleep 1000`)
	cfg.CDIDevices = []*runtimeapi.CDIDevice{{Name: "minicri.test/dev=gpu"}}
	id := c.run(t, podID, pod, cfg)
	lines := waitLog(t, c.ctrStatus(t, id).LogPath, "done", 10*time.Second)
	got := map[string]bool{}
	for _, l := range lines {
		got[l.content] = true
	}
	for _, want := range []string{"env=userns", "null=character special file 1:3", "null-written", "fuse-opened"} {
		if !got[want] {
			t.Errorf("container did not print %q; it printed %v", want, lines)
		}
	}
	c.stopRemove(t, podID)
	c.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}
