package integration

import (
	"strconv"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRestorePodPidsNotTakenMeanwhile: the restored containers share the
// pod's PID namespace and CRIU gives each task its checkpointed pid. Once
// the first container is restored and running, everything it forks takes
// the namespace's next free pids; those must not be the ones the second
// container's checkpoint needs (CRIU: "Can't fork for N: File exists").
// The first container forks 500 long-lived processes before the second is
// started, so without the reservation its pids are certainly taken.
func TestRestorePodPidsNotTakenMeanwhile(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podA, cfgA := i.podWithLogs(t, "podckpt-pids")
	_, infA := i.status(t, podA)
	ccs := []*runtimeapi.ContainerConfig{ctrConfig("one", "while true; do sleep 1; done"), ctrConfig("two", counterScript)}
	// Two's pids are high: one has used 300 before two starts.
	src := []string{i.run(t, podA, cfgA, ccs[0])}
	if out, code := i.exec(t, src[0], "sh", "-c", "for i in $(seq 300); do sleep 0 & done; wait"); code != 0 {
		t.Fatalf("fork in the source pod: %d %s", code, out)
	}
	src = append(src, i.run(t, podA, cfgA, ccs[1]))
	waitLog(t, i.ctrStatus(t, src[1]).LogPath, "3", 10*time.Second)
	dir := i.checkpointPod(t, podA, src...)
	after := lastCount(t, i.ctrStatus(t, src[1]).LogPath)
	i.stopRemove(t, podA)

	resp, err := i.rt.RestorePod(ctx(t), &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: i.logPodConfig("podckpt-pids-restored"), ContainerConfigs: ccs})
	if err != nil {
		t.Fatalf("RestorePod: %v", err)
	}
	podB := resp.PodSandboxId
	_, infB := i.status(t, podB)
	one, two := resp.RestoredContainers[0].ContainerId, resp.RestoredContainers[1].ContainerId
	i.startCtr(t, one)
	if out, code := i.exec(t, one, "sh", "-c", "for i in $(seq 500); do sleep 3600 </dev/null >/dev/null 2>&1 & done"); code != 0 {
		t.Fatalf("fork in the restored container: %d %s", code, out)
	}
	i.startCtr(t, two)
	waitLog(t, i.ctrStatus(t, two).LogPath, strconv.Itoa(after+3), 15*time.Second)
	if st := i.ctrStatus(t, one); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container one after two's restore: %v", st.State)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{podA: infA, podB: infB})
}
