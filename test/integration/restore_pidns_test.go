package integration

import (
	"strconv"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ownPIDNamespace puts the container in a PID namespace of its own (the
// kubelet's default: NamespaceMode CONTAINER).
func ownPIDNamespace(cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
	}
	return cfg
}

// TestRestoreOwnPIDNamespaceStops restores a counter that has its own PID
// namespace (as every kubelet container without shareProcessNamespace) and
// stops it: runc's Restore left the container's init start time unset, so
// its Signal took the init for gone and sent nothing; StopContainer then
// failed after 30 s with the container still running (test/e2e's
// checkpoint case found it through the kubelet).
func TestRestoreOwnPIDNamespaceStops(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "ckpt-pidns-src", ownPIDNamespace(ctrConfig("counter", counterScript)), "5")

	podB, cfgB := i.podWithLogs(t, "ckpt-pidns-dst")
	_, infB := i.status(t, podB)
	id := i.run(t, podB, cfgB, restoring(ownPIDNamespace(ctrConfig("counter", "exit 3")), src.archive))
	waitLog(t, i.ctrStatus(t, id).LogPath, strconv.Itoa(src.after+3), 15*time.Second)
	if got := i.execOut(t, id, "cat", "/proc/1/comm"); got != "sh" {
		t.Errorf("PID 1 seen by an exec in the restored container: %q, want the restored sh", got)
	}
	start := time.Now()
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatalf("StopContainer of the restored container: %v", err)
	}
	if st := i.waitExited(t, id, 10*time.Second); st.ExitCode != 137 {
		t.Errorf("restored container exit code %d, want 137", st.ExitCode)
	}
	t.Logf("stop took %s", time.Since(start).Round(time.Millisecond))
	i.stopRemove(t, podB)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}
