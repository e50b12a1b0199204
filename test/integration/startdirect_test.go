package integration

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// withOwnBinaries runs the instance from a copy of minicri and the
// programs next to it (monitor, helper, pause) in a directory of the test's,
// so that a test may take one of them away.
func withOwnBinaries(t *testing.T) option {
	dir := t.TempDir()
	src := filepath.Dir(minicriBin(t))
	for _, name := range []string{"minicri", "minicri-monitor", "minicri-monitor-helper", "minicri-pause"} {
		copyExecutable(t, filepath.Join(src, name), filepath.Join(dir, name))
	}
	return func(i *instance) { i.bin = filepath.Join(dir, "minicri") }
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// StartContainer of a libcontainer container is done by the C monitor
// itself (it opens the init's exec FIFO): it needs no helper process, so it
// works with the helper program gone. An init that died before the start
// makes StartContainer fail at once, not hang.
func TestStartContainerNeedsNoHelper(t *testing.T) {
	i := newInstance(t, withRegistry(), withOwnBinaries(t))
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "direct")
	_, podInf := i.status(t, podID)
	ok := i.create(t, podID, pod, ctrConfig("ok", "echo started; sleep 1000"))
	dead := i.create(t, podID, pod, ctrConfig("dead", "echo never"))
	deadInit := i.ctrPid(t, dead)

	helper := filepath.Join(filepath.Dir(i.bin), "minicri-monitor-helper")
	aside := helper + ".aside"
	if err := os.Rename(helper, aside); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := os.Rename(aside, helper); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer restore()

	i.startCtr(t, ok)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if lines := readLog(t, i.ctrStatus(t, ok).LogPath); len(lines) == 1 && lines[0].content == "started" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the started container logged %+v", readLog(t, i.ctrStatus(t, ok).LogPath))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := i.ctrStatus(t, ok); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Fatalf("started container: %v, started at %d", st.State, st.StartedAt)
	}

	if err := syscall.Kill(deadInit, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	// The start races the init's death: before the monitor reaps it (the
	// FIFO's EOF), after (the monitor knows it dead), or once the daemon
	// has recorded the exit (FailedPrecondition): never the helper.
	_, err := i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: dead})
	if err == nil || !strings.Contains(err.Error(), "already dead") &&
		(status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "is exited")) {
		t.Fatalf("StartContainer of a container whose init was killed: %v", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("StartContainer took %s to fail", d)
	}
	if st := i.waitExited(t, dead, 10*time.Second); st.StartedAt != 0 {
		t.Errorf("the dead container has a start time %d", st.StartedAt)
	}

	restore() // StopContainer and RemoveContainer run the helper
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}
