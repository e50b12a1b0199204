package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/monitor"
)

// startBehindTheDaemon does what a StartContainer does up to the monitor's
// answer, and no more: as if minicri were killed before it read the answer
// (or could not record it on a full root).
func (i *instance) startBehindTheDaemon(t *testing.T, podID, id string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sock := monitor.SocketPath(filepath.Join(i.dir, "state", "sandboxes", podID))
	if _, err := monitor.Call(c, sock, monitor.Request{Op: monitor.OpStart, ID: id}); err != nil {
		t.Fatalf("start %s through its monitor: %v", id, err)
	}
}

// A start whose answer was lost (the soak of issue 23 saw 31 StartContainer
// errors "exec fifo: open .../exec.fifo: no such file or directory" after
// daemon kills and full disks): the monitor had started the container, the
// record still said created, and asking again failed for ever. Asked again
// in the same run, the start is answered as the first one was; after a
// restart, the recovered record shows the container running.
func TestStartWhoseAnswerWasLost(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "lost")
	again := i.create(t, podID, pod, ctrConfig("again", "echo up; sleep 1000"))
	restarted := i.create(t, podID, pod, ctrConfig("restarted", "echo up; sleep 1000"))
	quick := i.create(t, podID, pod, ctrConfig("quick", "exit 3"))
	for _, id := range []string{again, restarted, quick} {
		i.startBehindTheDaemon(t, podID, id)
	}

	if _, err := i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: again}); err != nil {
		t.Fatalf("StartContainer of a container its monitor started: %v", err)
	}
	if st := i.ctrStatus(t, again); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Fatalf("after the repeated start: state %v, started at %d", st.State, st.StartedAt)
	}
	waitLogContains(t, i.ctrStatus(t, again).LogPath, "up", 5*time.Second)

	i.kill9()
	i.start()
	st := i.ctrStatus(t, restarted)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Fatalf("a container started before the kill reads %v after the restart (started at %d), want RUNNING", st.State, st.StartedAt)
	}
	_, err := i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: restarted})
	if err == nil || !strings.Contains(err.Error(), "not created") {
		t.Fatalf("StartContainer of a running container: %v, want FailedPrecondition", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := i.ctrStatus(t, quick)
		if q.State == runtimeapi.ContainerState_CONTAINER_EXITED && q.ExitCode == 3 && q.StartedAt != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a container that ran and exited 3 before the restart: state %v exit %d started %d", q.State, q.ExitCode, q.StartedAt)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
