package integration

import (
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// waitFDs waits until pid has at most want descriptors open.
func waitFDs(t *testing.T, pid, want int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := fdCount(pid)
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			links := []string{}
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			for _, e := range ents {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
				links = append(links, l)
			}
			t.Fatalf("%s: %d fds open, %d before: %v", what, n, want, links)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The kubelet retries a failing CreateContainer forever: the monitor must
// not keep anything (the container's log above all) of a failed create.
func TestFailedCreatesLeaveNoMonitorFDs(t *testing.T) {
	// Without garbage collection (the monitor inherits the daemon's
	// environment), only what the monitor closes itself is closed: a
	// descriptor left to a finalizer stays open until some later GC.
	t.Setenv("GOGC", "off")
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "failcreate")
	_, info := i.status(t, podID)
	failCreate := func(n int) {
		cfg := ctrConfig("fail", "")
		cfg.Command = []string{"/no/such/binary"}
		if _, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod}); err == nil {
			t.Fatalf("create %d of a container without its binary succeeded", n)
		}
	}
	// Warm up: the first create opens cgroup handles libcontainer keeps for
	// good; only growth after that is a leak.
	failCreate(0)
	time.Sleep(200 * time.Millisecond)
	base := fdCount(info.MonitorPID)
	for n := range 5 {
		failCreate(n + 1)
	}
	waitFDs(t, info.MonitorPID, base, 3*time.Second, "monitor after 5 failed creates")
	i.stopRemove(t, podID)
}

// An ExecSync that times out while its output keeps flowing (a background
// writer outlives the killed command) must not leave the daemon's pipes
// and copiers behind.
func TestExecSyncTimeoutWithFlowingOutputLeavesNoFDs(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "execflow")
	id := i.run(t, podID, pod, ctrConfig("execflow", "sleep 1000"))
	daemon := i.cmd.Process.Pid
	if _, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}, Timeout: 10}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	base := fdCount(daemon)
	for range 3 {
		_, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "yes & wait"}, Timeout: 1})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("want DeadlineExceeded, got %v", err)
		}
	}
	waitFDs(t, daemon, base, 5*time.Second, "daemon after 3 timed-out execs")
	i.stopRemove(t, podID)
}
