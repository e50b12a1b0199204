package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Review-11 item 3: two containers of one image; the image is removed
// (tombstone); the daemon crashes while one of them is half-created (its
// record says "creating"). At restart the running one is recovered and
// re-pins the image, then the half-created one is cleaned up: its cleanup
// must not drop the running one's pin, or the GC that ends recovery
// deletes the layers under the running container.
func TestCrashedCreationDoesNotReleaseAnotherContainersImage(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "lease-crash")
	a := i.run(t, podID, pod, ctrConfig("a", "sleep 3600"))
	b := i.run(t, podID, pod, ctrConfig("b", "sleep 3600"))
	layers := i.layerDirs(t)
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: busybox}}); err != nil {
		t.Fatalf("RemoveImage of an image in use: %v", err)
	}
	// Recovery scans records in ID order: the half-created one must come
	// after the running one to release after it re-pinned.
	running, crashed := min(a, b), max(a, b)
	i.kill9()
	recPath := filepath.Join(i.dir, "root", "containers", crashed, "container.json")
	data, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["status"].(map[string]any)["state"] = "creating"
	if data, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	i.start()

	if got := i.layerDirs(t); !slices.Equal(got, layers) {
		t.Errorf("layers after restart: %v, want %v", got, layers)
	}
	if _, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: crashed}); err == nil {
		t.Errorf("half-created container %s still listed after recovery", crashed)
	}
	if st := i.ctrStatus(t, running); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container after restart: %v", st.State)
	}
	if out, code := i.exec(t, running, "cat", "/etc/passwd"); code != 0 || !strings.Contains(out, "root:") {
		t.Fatalf("reading a file of the image after restart: exit %d, %q", code, out)
	}
	// The running container goes: the layers follow.
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: running, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: running}); err != nil {
		t.Fatal(err)
	}
	if got := i.layerDirs(t); len(got) != 0 {
		t.Errorf("layers left after the last user went: %v", got)
	}
	i.stopRemove(t, podID)
}
