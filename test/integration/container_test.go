package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
)

func TestContainerLifecycleLogsAndLeaks(t *testing.T) {
	i := newInstance(t, withRegistry())
	imageRef := i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "life")
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("life", "echo out; echo err >&2; id -u; hostname; sleep 1000"))
	st := i.ctrStatus(t, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 || st.ImageId != imageRef {
		t.Fatalf("status after start: %v", st)
	}
	lines := waitLog(t, st.LogPath, "life", 5*time.Second)
	got := map[string]string{}
	for _, l := range lines {
		got[l.content] = l.stream + " " + l.tag
	}
	for content, want := range map[string]string{"out": "stdout F", "err": "stderr F", "0": "stdout F", "life": "stdout F"} {
		if got[content] != want {
			t.Errorf("log line %q: got %q, want %q (all: %v)", content, got[content], want, lines)
		}
	}
	// The container shares the pod's namespaces, and sits in its own cgroup.
	var info struct{ Pid int }
	resp, _ := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	jsonUnmarshal(t, resp.Info["info"], &info)
	for _, ns := range []string{"net", "ipc", "uts", "pid"} {
		if nsInode(t, info.Pid, ns) != nsInode(t, podInf.PID, ns) {
			t.Errorf("container is not in the pod's %s namespace", ns)
		}
	}
	// Its own cgroup: <parent>/<id> (cgroupfs) or minicri-<id>.scope (systemd).
	if d := i.ctrCgroupDir(t, id, "memory"); !strings.Contains(filepath.Base(d), id) {
		t.Errorf("container process in cgroup %s, not the container's own", d)
	}
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		t.Fatal(err)
	}
	st = i.ctrStatus(t, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 143 || st.Reason != "Error" || st.FinishedAt == 0 {
		t.Fatalf("after SIGTERM: state %v exit %d reason %q", st.State, st.ExitCode, st.Reason)
	}
	for range 2 { // Stop and Remove are idempotent
		if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	i.assertCtrGone(t, id)
	if _, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("status of a removed container: %v", err)
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

func TestExitCodesAndReasons(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "exit")
	for _, c := range []struct {
		script string
		code   int32
		reason string
	}{{"exit 0", 0, "Completed"}, {"exit 3", 3, "Error"}, {"kill -KILL $$", 137, "Error"}} {
		id := i.run(t, podID, pod, ctrConfig(fmt.Sprintf("exit-%d", c.code), c.script))
		st := i.waitExited(t, id, 10*time.Second)
		if st.ExitCode != c.code || st.Reason != c.reason {
			t.Errorf("%q: exit %d reason %q, want %d %q", c.script, st.ExitCode, st.Reason, c.code, c.reason)
		}
	}
}

func TestStopKillsAContainerThatIgnoresSIGTERM(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "stubborn")
	id := i.run(t, podID, pod, ctrConfig("stubborn", "trap '' TERM; echo trapped; while true; do sleep 1; done"))
	waitLog(t, i.ctrStatus(t, id).LogPath, "trapped", 5*time.Second)
	start := time.Now()
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st := i.ctrStatus(t, id)
	if st.ExitCode != 137 || took < time.Second {
		t.Fatalf("exit %d after %s; want 137 (SIGKILL) after the 1s grace", st.ExitCode, took)
	}
}

func TestOOMKillIsReported(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "oom")
	cfg := ctrConfig("oom", "x=$(yes 0123456789012345678901234567890123456789 | head -c 200000000); echo never")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20}
	id := i.run(t, podID, pod, cfg)
	st := i.waitExited(t, id, 60*time.Second)
	if st.Reason != "OOMKilled" || st.ExitCode != 137 {
		t.Fatalf("want OOMKilled/137, got %q/%d", st.Reason, st.ExitCode)
	}
}

func TestLongLinesAndLogReopenLoseNothing(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "logs")
	// One 100 KiB line, then 100000 numbered lines (about 10 MB with padding).
	script := `head -c 102400 /dev/zero | tr '\0' x; echo; i=0; while [ $i -lt 100000 ]; do echo "line $i ................................................................................................"; i=$((i+1)); done; echo done; sleep 1000`
	id := i.run(t, podID, pod, ctrConfig("logs", script))
	path := i.ctrStatus(t, id).LogPath
	// Rotate in the middle, as the kubelet does, then ask for a reopen.
	waitLogContains(t, path, "line 20000 ", 60*time.Second)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := i.rt.ReopenContainerLog(ctx(t), &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, path, "done", 60*time.Second)
	lines := append(readLog(t, path+".1"), readLog(t, path)...)
	var long strings.Builder
	k := 0
	for ; k < len(lines) && lines[k].tag == "P"; k++ {
		long.WriteString(lines[k].content)
	}
	long.WriteString(lines[k].content)
	if long.String() != strings.Repeat("x", 102400) || k < 6 {
		t.Fatalf("100 KiB line: %d bytes in %d partial chunks", long.Len(), k)
	}
	next := 0
	for _, l := range lines[k+1:] {
		if l.content == "done" {
			break
		}
		n, err := strconv.Atoi(strings.Fields(l.content)[1])
		if err != nil || n != next || l.tag != "F" {
			t.Fatalf("line %d lost, duplicated or damaged: %q", next, l.content)
		}
		next++
	}
	if next != 100000 {
		t.Fatalf("got %d numbered lines, want 100000", next)
	}
}

func waitLogContains(t *testing.T, path, substr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s never contained %q", path, substr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestContainersSurviveDaemonRestartAndKeepLogging(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "restart")
	// 100 lines of 1 KiB per second, numbered.
	pad := strings.Repeat("p", 1000)
	writer := i.run(t, podID, pod, ctrConfig("writer", `i=0; while true; do echo "$i `+pad+`"; i=$((i+1)); sleep 0.01; done`))
	quitter := i.run(t, podID, pod, ctrConfig("quitter", "sleep 2; exit 7"))
	path := i.ctrStatus(t, writer).LogPath
	waitLogContains(t, path, "\n", 5*time.Second)
	i.kill9()
	atKill := len(readLog(t, path))
	// A stdout pipe holds 64 KiB, about 64 of these lines: a writer whose
	// output nobody copied while minicri was down would block there. Stay
	// down until two pipes' worth more were logged (about 1.3 s on a quiet
	// machine; a slow emulated one takes longer), and at least 4 s, so the
	// quitter exits while minicri is down.
	downSince, whileDown := time.Now(), 0
	for time.Since(downSince) < 4*time.Second || (whileDown < 2*64 && time.Since(downSince) < time.Minute) {
		time.Sleep(100 * time.Millisecond)
		whileDown = len(readLog(t, path)) - atKill
	}
	i.start()
	st := i.ctrStatus(t, writer)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("writer after restart: %v", st.State)
	}
	q := i.ctrStatus(t, quitter)
	if q.State != runtimeapi.ContainerState_CONTAINER_EXITED || q.ExitCode != 7 || q.FinishedAt == 0 {
		t.Fatalf("quitter after restart: state %v exit %d", q.State, q.ExitCode)
	}
	if time.Unix(0, q.FinishedAt).After(time.Now().Add(-time.Second)) {
		t.Fatalf("quitter's finish time %v is the restart, not its real exit", time.Unix(0, q.FinishedAt))
	}
	lines := readLog(t, path)
	for n, l := range lines {
		if f := strings.Fields(l.content); len(f) != 2 || f[0] != strconv.Itoa(n) {
			t.Fatalf("log line %d is %q: a line was lost or damaged", n, l.content)
		}
	}
	if whileDown < 2*64 {
		t.Fatalf("only %d lines written in the minute minicri was down: the writer was blocked", whileDown)
	}
	i.stopRemove(t, podID)
}

func TestKilledMonitorLeavesContainersManageable(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "monkill")
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("victim", "sleep 1000"))
	if err := syscall.Kill(podInf.MonitorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	i.waitMonitorGone(t, podID) // reported: the pod is not ready any more
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatalf("stop without a monitor: %v", err)
	}
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("state %v", st.State)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("remove without a monitor: %v", err)
	}
	i.assertCtrGone(t, id)
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

func TestSymlinkHostPathMountAndUpdateResources(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "mounts")
	real := t.TempDir()
	os.WriteFile(filepath.Join(real, "flag"), []byte("here\n"), 0o644)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cfg := ctrConfig("mounts", "sleep 1000")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: link, Readonly: true}}
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20, CpuShares: 512}
	id := i.run(t, podID, pod, cfg)
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"cat", "/data/flag"}, Timeout: 10})
	if err != nil || string(res.Stdout) != "here\n" {
		t.Fatalf("file through a symlinked host path: %q %v", res.GetStdout(), err)
	}
	res, _ = i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"touch", "/data/x"}, Timeout: 10})
	if res.ExitCode == 0 {
		t.Fatal("a read-only mount accepted a write")
	}
	if got := i.ctrCgroupFile(t, id, "memory", "memory.limit_in_bytes", "memory.max"); got != strconv.Itoa(64<<20) {
		t.Fatalf("memory limit %s", got)
	}
	_, err = i.rt.UpdateContainerResources(ctx(t), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id,
		Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 128 << 20, CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000}})
	if err != nil {
		t.Fatal(err)
	}
	if got := i.ctrCgroupFile(t, id, "memory", "memory.limit_in_bytes", "memory.max"); got != strconv.Itoa(128<<20) {
		t.Fatalf("memory limit after update %s", got)
	}
	wantQuota := "50000"
	if hostUnified() {
		wantQuota = "50000 100000"
	}
	if got := i.ctrCgroupFile(t, id, "cpu", "cpu.cfs_quota_us", "cpu.max"); got != wantQuota {
		t.Fatalf("cpu quota after update %s", got)
	}
	if got := i.ctrStatus(t, id).Resources.Linux.MemoryLimitInBytes; got != 128<<20 {
		t.Fatalf("status reports memory limit %d after update", got)
	}
}

func TestExecSyncTimeoutReapsTheCommand(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "exec")
	id := i.run(t, podID, pod, ctrConfig("exec", "sleep 1000"))
	_, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sleep", "4321"}, Timeout: 1})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if p := processesMentioning("sleep\x004321\x00"); len(p) > 0 {
		t.Fatalf("timed-out command still there: %v", p)
	}
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo o; echo e >&2; exit 5"}, Timeout: 10})
	if err != nil || string(res.Stdout) != "o\n" || string(res.Stderr) != "e\n" || res.ExitCode != 5 {
		t.Fatalf("exec: %v %v", res, err)
	}
	res, err = i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "head -c 20000000 /dev/zero"}, Timeout: 30})
	if err != nil || len(res.Stdout) != container.MaxExecOutput {
		t.Fatalf("output must be capped at %d bytes: got %d, %v", container.MaxExecOutput, len(res.GetStdout()), err)
	}
	i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id})
	if _, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("exec in a stopped container: %v", err)
	}
}

func TestMonitorReapsOrphansOfHostPIDContainers(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := podConfig("orphans")
	pod.LogDirectory = filepath.Join(i.dir, "logs", "orphans")
	pod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE}}
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	cfg := ctrConfig("orphans", "for n in 1 2 3; do sleep 0.3 & done; exit 0")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE}}
	id := i.run(t, podID, pod, cfg)
	i.waitExited(t, id, 10*time.Second)
	time.Sleep(time.Second) // the orphaned sleeps exit 0.3 s after their parent
	deadline := time.Now().Add(5 * time.Second)
	for {
		zombies := zombieChildren(podInf.MonitorPID)
		if len(zombies) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zombie children left under the monitor: %v", zombies)
		}
		time.Sleep(100 * time.Millisecond)
	}
	i.stopRemove(t, podID)
}

// zombieChildren lists the exited, unreaped children of pid (all threads).
func zombieChildren(pid int) []int {
	var out []int
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			child, _ := strconv.Atoi(field)
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); err == nil && strings.Contains(string(st), ") Z ") {
				out = append(out, child)
			}
		}
	}
	return out
}
