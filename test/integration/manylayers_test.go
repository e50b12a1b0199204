package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// manyLayers is the fixture image of 128 layers.
const manyLayers = fixture.ManyLayersRef

// assertManyLayersVisible checks, in a running container of manyLayers (as
// its rootfs under root, or as an image volume under dir), the bottom
// (busybox), first added and top layers and that the top layer wins.
func (i *instance) assertManyLayersVisible(t *testing.T, id, dir string) {
	t.Helper()
	out, code := i.exec(t, id, "cat", dir+"/many/layer-001", dir+"/many/layer-127", dir+"/many/which")
	if code != 0 || out != "001\n127\n127\n" {
		t.Fatalf("layers under %q: %q (exit %d)", dir, out, code)
	}
	if _, code := i.exec(t, id, "test", "-x", dir+"/bin/busybox"); code != 0 {
		t.Fatalf("bottom layer's busybox missing under %q", dir)
	}
}

// TestManyLayerImageRuns runs a container of a 128-layer image, which also
// serves as an image volume, in a pod on the host's user namespace and in
// one with its own (idmapped layers), then removes everything.
func TestManyLayerImageRuns(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, manyLayers)
	pods := map[string]podInfo{}
	for _, userns := range []bool{false, true} {
		name := map[bool]string{false: "many", true: "many-userns"}[userns]
		pod := podConfig(name)
		if userns {
			pod = usernsPodConfig(name, runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
		}
		pod.LogDirectory = filepath.Join(i.dir, "logs", name)
		podID := i.runPod(t, pod)
		_, pods[podID] = i.status(t, podID)
		cfg := ctrConfig(name, "sleep 1000")
		cfg.Image.Image = manyLayers
		cfg.Mounts = []*runtimeapi.Mount{imageMount("/vol", manyLayers, "")}
		id := i.run(t, podID, pod, cfg)
		i.assertManyLayersVisible(t, id, "")
		i.assertManyLayersVisible(t, id, "/vol")
		if out, code := i.exec(t, id, "sh", "-c", "echo w > /many/which && cat /many/which"); code != 0 || out != "w\n" {
			t.Fatalf("userns=%v: write over the top layer: %q (exit %d)", userns, out, code)
		}
		i.stopRemove(t, podID)
		i.assertCtrGone(t, id)
	}
	i.assertNothingLeft(t, pods)
}

// TestFailingRootfsMountLeavesNothing makes the rootfs step itself fail
// half-way (a layer of the image vanished from the store, after the
// idmapped views of the layers above it were attached) in a pod with its
// own user namespace, twice, as kubelet retries: each failure must leave
// no mount, no container record and no directory.
func TestFailingRootfsMountLeavesNothing(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, manyLayers)
	pod := usernsPodConfig("failmount", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	// The busybox layer is the bottom one: the views of the 127 layers
	// above it are attached before its own fails.
	removed := 0
	for _, l := range i.layerDirs(t) {
		dir := filepath.Join(i.dir, "root", "images", "layers", l)
		if exists(filepath.Join(dir, "bin", "busybox")) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			removed++
		}
	}
	if removed != 1 {
		t.Fatalf("test bug: removed %d busybox layers", removed)
	}
	cfg := ctrConfig("failmount", "sleep 1000")
	cfg.Image.Image = manyLayers
	for attempt := range 2 {
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if err == nil || !strings.Contains(err.Error(), "mount rootfs") {
			t.Fatalf("attempt %d: want a failed rootfs step, got %v", attempt, err)
		}
		if ms := mountsUnder(filepath.Join(i.dir, "state", "containers")); len(ms) > 0 {
			t.Fatalf("attempt %d: %d mounts left, e.g. %s", attempt, len(ms), ms[0])
		}
		for _, d := range []string{"root/containers", "state/containers"} {
			if ents, _ := os.ReadDir(filepath.Join(i.dir, d)); len(ents) > 0 {
				t.Fatalf("attempt %d: %s left: %s", attempt, d, ents[0].Name())
			}
		}
		resp, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
		if err != nil || len(resp.Containers) != 0 {
			t.Fatalf("attempt %d: containers listed: %v %v", attempt, resp.GetContainers(), err)
		}
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}
