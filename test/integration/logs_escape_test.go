package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The attack: a log_path that climbs out of the pod log directory, and links
// planted in the log directory (at create, and after a rotation before
// ReopenContainerLog) that make root write where the link points.
func TestLogPathsCannotEscapeThePodLogDirectory(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "logescape")
	outside := filepath.Join(i.dir, "outside")
	for _, d := range []string{pod.LogDirectory, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	up, err := filepath.Rel(pod.LogDirectory, filepath.Join(outside, "up.log"))
	if err != nil {
		t.Fatal(err)
	}
	for n, p := range []string{up, "ctr/../../../outside/up.log", filepath.Join(outside, "abs.log"), ".."} {
		cfg := ctrConfig(fmt.Sprintf("escape-%d", n), "echo escaped")
		cfg.LogPath = p
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("log_path %q: want InvalidArgument, got %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "up.log")); err == nil {
		t.Error("a log was created outside the pod log directory")
	}

	// Links planted where the kubelet will ask for the log.
	target := filepath.Join(outside, "shadow")
	if err := os.WriteFile(target, []byte("host data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(target, filepath.Join(pod.LogDirectory, "link.log"))
	os.Symlink(outside, filepath.Join(pod.LogDirectory, "linkdir"))
	for n, p := range []string{"link.log", "linkdir/0.log"} {
		cfg := ctrConfig(fmt.Sprintf("link-%d", n), "echo written-through-link")
		cfg.LogPath = p
		resp, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if err == nil {
			i.startCtr(t, resp.ContainerId)
			i.waitExited(t, resp.ContainerId, 10*time.Second)
			t.Errorf("log_path %q through a symlink was accepted", p)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "host data\n" {
		t.Errorf("host file written through a log symlink: %q", data)
	}
	if _, err := os.Stat(filepath.Join(outside, "0.log")); err == nil {
		t.Error("a log was created through a symlinked directory")
	}

	// Rotation, then a link at the log's name before ReopenContainerLog.
	cfg := ctrConfig("rot", "while true; do echo tick; sleep 0.05; done")
	cfg.LogPath = "rot/0.log"
	id := i.run(t, podID, pod, cfg)
	logPath := filepath.Join(pod.LogDirectory, "rot", "0.log")
	waitLog(t, logPath, "tick", 10*time.Second)
	target2 := filepath.Join(outside, "passwd")
	if err := os.WriteFile(target2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Rename(logPath, logPath+".1")
	os.Symlink(target2, logPath)
	if _, err := i.rt.ReopenContainerLog(ctx(t), &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err == nil {
		t.Error("ReopenContainerLog through a symlink succeeded")
	}
	before := len(readLog(t, logPath+".1"))
	time.Sleep(300 * time.Millisecond)
	if data, _ := os.ReadFile(target2); len(data) != 0 {
		t.Errorf("host file written through a log symlink after reopen: %q", data)
	}
	if after := len(readLog(t, logPath+".1")); after <= before {
		t.Errorf("the old log is no longer written after a refused reopen (%d lines, then %d)", before, after)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
}
