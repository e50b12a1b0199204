package integration

import (
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// TestLazyUserNamespacePod: a container of a lazily pulled image in a pod
// with its own user namespace (its rootfs layers are idmapped mounts, FUSE
// ones among them: lazyfs allows them). Inside, it is root, the image's
// files are owned by root as in the image and read right, a file not
// fetched yet too, and it may write its rootfs; outside, it runs as the
// pod's host ID. Before, CreateContainer failed: "idmap mount ...: invalid
// argument". Nothing is left afterwards.
func TestLazyUserNamespacePod(t *testing.T) {
	fuseBefore := fuseConnections(t)
	i := newInstance(t, withRegistry(), withLazyPulls())
	lazyfs := killLazyfsAtEnd(t, i)
	i.pull(t, fixture.EStargzRef)
	pod := usernsPodConfig("lazy-userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "lazy-userns")
	podID := i.runPod(t, pod)
	cfg := ctrConfig("lazy-userns", "id -u; stat -c '%u %g %a' /lazy/hello.txt /lazy/big.bin; "+
		"sha256sum /lazy/hello.txt /lazy/big.bin; touch /rootfs-write && echo wrote; sleep 1000")
	cfg.Image.Image = fixture.EStargzRef
	id := i.run(t, podID, pod, cfg)
	lines := waitLog(t, i.ctrStatus(t, id).LogPath, "wrote", 30*time.Second)
	want := []string{"0", "0 0 644", "1000 2000 640", // as in the image (fixture.EStargzFiles)
		fileSum(t, "lazy/hello.txt") + "  /lazy/hello.txt", fileSum(t, "lazy/big.bin") + "  /lazy/big.bin", "wrote"}
	if len(lines) != len(want) {
		t.Fatalf("log %v, want %q", lines, want)
	}
	for k, l := range lines {
		if l.content != want[k] {
			t.Errorf("line %d: %q, want %q", k, l.content, want[k])
		}
	}
	var info struct{ Pid int }
	resp, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	jsonUnmarshal(t, resp.Info["info"], &info)
	if uid := procUID(t, info.Pid); uid != usernsHostID {
		t.Errorf("outside, the container runs as uid %d, want %d", uid, usernsHostID)
	}
	i.lazyTeardown(t, lazyfs, podID, fixture.EStargzRef, fuseBefore)
}
