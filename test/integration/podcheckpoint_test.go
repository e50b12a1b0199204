package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCheckpointPodAndRestorePod checkpoints a two-container pod as one
// cut and restores it as a new pod whose counters go on.
func TestCheckpointPodAndRestorePod(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podA, cfgA := i.podWithLogs(t, "podckpt")
	_, infA := i.status(t, podA)
	src, ccs := i.runCounters(t, podA, cfgA, "3", "one", "two")

	// Bad requests write nothing and leave the pod running.
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	for _, c := range []struct {
		req  *runtimeapi.CheckpointPodRequest
		want codes.Code
	}{
		{&runtimeapi.CheckpointPodRequest{PodSandboxId: podA, OutputPath: full, ContainerIds: src}, codes.InvalidArgument},
		{&runtimeapi.CheckpointPodRequest{PodSandboxId: podA, OutputPath: t.TempDir(), ContainerIds: []string{src[0], src[0]}}, codes.InvalidArgument},
		{&runtimeapi.CheckpointPodRequest{PodSandboxId: podA, OutputPath: t.TempDir()}, codes.InvalidArgument},
		{&runtimeapi.CheckpointPodRequest{PodSandboxId: podA, OutputPath: "rel", ContainerIds: src}, codes.InvalidArgument},
	} {
		if _, err := i.rt.CheckpointPod(ctx(t), c.req); status.Code(err) != c.want {
			t.Errorf("CheckpointPod(%v): %v, want %v", c.req, err, c.want)
		}
		if ents, _ := os.ReadDir(c.req.OutputPath); filepath.IsAbs(c.req.OutputPath) && c.req.OutputPath != full && len(ents) != 0 {
			t.Errorf("failed CheckpointPod left %d entries", len(ents))
		}
	}

	before := map[string]int{}
	for _, id := range src {
		before[id] = lastCount(t, i.ctrStatus(t, id).LogPath)
	}
	start := time.Now()
	dir := i.checkpointPod(t, podA, src...)
	t.Logf("CheckpointPod took %s", time.Since(start).Round(time.Millisecond))
	after := map[string]int{}
	for _, id := range src {
		st := i.ctrStatus(t, id)
		if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("container %s after CheckpointPod: %v", id, st.State)
		}
		after[id] = lastCount(t, st.LogPath)
		waitLog(t, st.LogPath, strconv.Itoa(after[id]+3), 10*time.Second) // thawed: counting on
	}
	i.stopRemove(t, podA)

	// Names must match the checkpoint exactly; nothing is created otherwise.
	cfgB := i.logPodConfig("podckpt-restored")
	if _, err := i.rt.RestorePod(ctx(t), &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: cfgB, ContainerConfigs: ccs[:1]}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("RestorePod with one name missing: %v", err)
	}
	if pods, _ := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{}); len(pods.GetItems()) != 0 {
		t.Errorf("a refused RestorePod left %d pods", len(pods.GetItems()))
	}

	start = time.Now()
	podB, ids := i.restorePod(t, dir, cfgB, ccs...)
	t.Logf("RestorePod + StartContainer took %s", time.Since(start).Round(time.Millisecond))
	_, infB := i.status(t, podB)
	for n, id := range src {
		name := ccs[n].Metadata.Name
		path := i.ctrStatus(t, ids[name]).LogPath
		waitLog(t, path, strconv.Itoa(after[id]+3), 15*time.Second)
		// One cut: each restored counter starts where it was frozen.
		if first := firstCount(t, path); first < before[id] || first > after[id]+1 {
			t.Errorf("%s restored at %d; checkpointed between %d and %d", name, first, before[id], after[id])
		}
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{podA: infA, podB: infB})
}

// TestRestorePodFailureLeavesNothing: a checkpoint with a corrupt archive
// fails the restore after the sandbox was made; the sandbox and the
// containers already restored are removed.
func TestRestorePodFailureLeavesNothing(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podA, cfgA := i.podWithLogs(t, "podckpt-bad")
	_, infA := i.status(t, podA)
	src, ccs := i.runCounters(t, podA, cfgA, "2", "one", "two")
	one, two := src[0], src[1]
	dir := i.checkpointPod(t, podA, one, two)
	i.stopRemove(t, podA)
	if err := os.WriteFile(filepath.Join(dir, two+".tar"), []byte("corrupt"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgB := podConfig("podckpt-bad-restored")
	_, err := i.rt.RestorePod(ctx(t), &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: cfgB, ContainerConfigs: ccs})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("RestorePod with a corrupt archive: %v, want InvalidArgument", err)
	}
	if pods, _ := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{}); len(pods.GetItems()) != 0 {
		t.Errorf("failed RestorePod left pods: %v", pods.GetItems())
	}
	if ctrs, _ := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{}); len(ctrs.GetContainers()) != 0 {
		t.Errorf("failed RestorePod left containers: %v", ctrs.GetContainers())
	}
	for _, d := range []string{"root/containers", "state/containers", "root/sandboxes", "state/sandboxes"} {
		if ents, _ := os.ReadDir(filepath.Join(i.dir, d)); len(ents) != 0 {
			t.Errorf("%s holds %d entries after a failed RestorePod", d, len(ents))
		}
	}
	// A checkpoint from another format is refused up front.
	os.WriteFile(filepath.Join(dir, "pod.json"), []byte(`{"minicriPodCheckpointFormat":7,"runtime":"minicri"}`), 0o600)
	if _, err := i.rt.RestorePod(ctx(t), &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: cfgB, ContainerConfigs: ccs}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("RestorePod of format 7: %v, want FailedPrecondition", err)
	}
	i.assertNothingLeft(t, map[string]podInfo{podA: infA})
}

// TestRestartThawsContainerLeftFrozen: a daemon that dies while
// CheckpointPod holds the pod frozen must not leave it frozen; the next
// start thaws it (simulated: the container's cgroup is frozen by hand
// and the daemon killed).
func TestRestartThawsContainerLeftFrozen(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod, cfg := i.podWithLogs(t, "frozen")
	_, inf := i.status(t, pod)
	id := i.run(t, pod, cfg, ctrConfig("counter", counterScript))
	path := i.ctrStatus(t, id).LogPath
	waitLog(t, path, "3", 10*time.Second)
	file, frozen, thawed := "freezer.state", "FROZEN", "THAWED"
	if hostUnified() {
		file, frozen, thawed = "cgroup.freeze", "1", "0"
	}
	if err := os.WriteFile(filepath.Join(i.ctrCgroupDir(t, id, "freezer"), file), []byte(frozen), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	stuck := lastCount(t, path)
	i.kill9()
	time.Sleep(500 * time.Millisecond)
	if n := lastCount(t, path); n != stuck {
		t.Fatalf("the container kept counting while frozen (%d -> %d): test setup broken", stuck, n)
	}
	i.start()
	waitLog(t, path, strconv.Itoa(stuck+5), 10*time.Second)
	if s := i.ctrCgroupFile(t, id, "freezer", "freezer.state", "cgroup.freeze"); s != thawed {
		t.Errorf("freezer after restart: %q", s)
	}
	i.stopRemove(t, pod)
	i.assertNothingLeft(t, map[string]podInfo{pod: inf})
}
