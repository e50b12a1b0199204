package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runcPath is Debian's runc (hack/deps.sh installs it), configured in every
// instance as the RuntimeClass handler "runc".
const runcPath = "/usr/sbin/runc"

// handlerEnv, when set, names the handler every pod of a new instance uses:
// the tests below run existing tests under the runc handler with it.
const handlerEnv = "MINICRI_TEST_RUNTIME_HANDLER"

// runtimesConfig is the instance's [runtimes.runc] table; it picks the
// handler pods use from handlerEnv unless an option chose one.
func (i *instance) runtimesConfig() string {
	if i.handler == "" {
		i.handler = os.Getenv(handlerEnv)
	}
	if _, err := os.Stat(runcPath); err != nil {
		return ""
	}
	return fmt.Sprintf("[runtimes.runc]\npath = %q\n", runcPath)
}

func needRunc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(runcPath); err != nil {
		t.Fatalf("%s is missing (hack/deps.sh installs the runc package): %v", runcPath, err)
	}
}

// runcList is `runc list` of the instance's runc handler: ID -> status.
func (i *instance) runcList(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command(runcPath, "--root", filepath.Join(i.dir, "state", "runtimes", "runc"), "list").CombinedOutput()
	if err != nil {
		t.Fatalf("runc list: %v: %s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(out), "\n")[1:] {
		if f := strings.Fields(l); len(f) >= 3 {
			got[f[0]] = f[2]
		}
	}
	return got
}

func ppid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, _ := strconv.Atoi(f[1])
	return n
}

func TestRuntimeHandlersInStatusAndUnknownHandlerRejected(t *testing.T) {
	needRunc(t)
	i := newInstance(t)
	st, err := i.rt.Status(ctx(t), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, h := range st.RuntimeHandlers {
		got[h.Name] = fmt.Sprintf("rro=%v userns=%v", h.Features.RecursiveReadOnlyMounts, h.Features.UserNamespaces)
	}
	// Debian's runc 1.1 knows "rro" but has no idmapped mounts.
	want := map[string]string{"": "rro=true userns=true", "runc": "rro=true userns=false"}
	if fmt.Sprint(got) != fmt.Sprint(want) || st.RuntimeHandlers[0].Name != "" {
		t.Fatalf("handlers %v, want %v (built-in first)", got, want)
	}

	cfg := podConfig("unknown-handler")
	_, err = i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: "no-such-handler"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"no-such-handler"`) {
		t.Fatalf("unknown handler: %v; want InvalidArgument naming it", err)
	}
	// A pod with its own user namespace needs a handler that supports them.
	uns := podConfig("userns-runc")
	uns.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
			Uids: []*runtimeapi.IDMapping{{HostId: 1 << 20, ContainerId: 0, Length: 65536}},
			Gids: []*runtimeapi.IDMapping{{HostId: 1 << 20, ContainerId: 0, Length: 65536}}},
	}}
	_, err = i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: uns, RuntimeHandler: "runc"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "user namespaces") {
		t.Fatalf("userns pod on runc 1.1: %v; want InvalidArgument", err)
	}
	// Nothing was created: no pod, no process, no cgroup, no pod directory.
	if l, _ := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{}); len(l.GetItems()) != 0 {
		t.Fatalf("pods after rejected requests: %v", l.Items)
	}
	for _, uid := range []string{cfg.Metadata.Uid, uns.Metadata.Uid} {
		if p := processesMentioning(uid); len(p) > 0 {
			t.Errorf("processes left: %v", p)
		}
	}
	for _, r := range cgroupRoots {
		if ents, err := os.ReadDir(filepath.Join("/sys/fs/cgroup", r, i.cgParent)); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					t.Errorf("cgroup left: %s", filepath.Join(r, i.cgParent, e.Name()))
				}
			}
		}
	}
	for _, d := range []string{filepath.Join(i.dir, "root", "sandboxes"), filepath.Join(i.dir, "state", "sandboxes")} {
		if ents, _ := os.ReadDir(d); len(ents) > 0 {
			t.Errorf("%s holds %d entries after rejected pods", d, len(ents))
		}
	}
}

// TestRuncHandlerRunsContainersThroughRunc shows a container of a pod with
// the runc handler is runc's (runc lists it, and its state dir is runc's),
// is still the monitor's child with its logs, execs and exit codes, stays
// manageable across a daemon restart, and leaves nothing behind.
func TestRuncHandlerRunsContainersThroughRunc(t *testing.T) {
	needRunc(t)
	i := newInstance(t, withRegistry(), func(i *instance) { i.handler = "runc" })
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "runc")
	_, podInf := i.status(t, podID)
	if resp, _ := i.rt.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID}); resp.GetStatus().GetRuntimeHandler() != "runc" {
		t.Fatalf("pod status handler %q", resp.GetStatus().GetRuntimeHandler())
	}
	id := i.run(t, podID, pod, ctrConfig("runc", "echo out; echo err >&2; sleep 1000"))
	if got := i.runcList(t)[id]; got != "running" {
		t.Fatalf("runc list: container %s is %q, want running", id, got)
	}
	if _, err := os.Stat(filepath.Join(i.dir, "state", "runc", id)); err == nil {
		t.Fatal("the container has libcontainer state: it was not run by the runc binary")
	}
	pid := i.ctrPid(t, id)
	if pp := ppid(t, pid); pp != podInf.MonitorPID {
		t.Fatalf("container init %d has parent %d, want the monitor %d", pid, pp, podInf.MonitorPID)
	}
	waitLog(t, i.ctrStatus(t, id).LogPath, "err", 5*time.Second)
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo o; echo e >&2; exit 5"}, Timeout: 10})
	if err != nil || string(res.Stdout) != "o\n" || string(res.Stderr) != "e\n" || res.ExitCode != 5 {
		t.Fatalf("ExecSync: %v %v", res, err)
	}
	_, err = i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: filepath.Join(t.TempDir(), "c.tar")})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "built-in runtime") {
		t.Fatalf("checkpoint of a runc-handler container: %v; want FailedPrecondition", err)
	}
	stats, err := i.rt.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil || stats.Stats.GetMemory().GetWorkingSetBytes().GetValue() == 0 && stats.Stats.GetMemory().GetUsageBytes().GetValue() == 0 {
		t.Fatalf("stats from the container's cgroup: %v %v", stats, err)
	}

	i.kill9()
	i.start()
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after a daemon restart: %v", st.State)
	}
	res, err = i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"echo", "again"}, Timeout: 10})
	if err != nil || string(res.Stdout) != "again\n" {
		t.Fatalf("ExecSync after restart: %v %v", res, err)
	}
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		t.Fatal(err)
	}
	if st := i.ctrStatus(t, id); st.ExitCode != 143 {
		t.Fatalf("exit %d after SIGTERM, want 143", st.ExitCode)
	}
	if _, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("exec in a stopped container: %v", err)
	}
	for range 2 {
		if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := i.runcList(t)[id]; ok {
		t.Fatal("runc still lists the removed container")
	}
	i.assertCtrGone(t, id)
	// A second container, left running: the pod's stop and removal take it.
	id2 := i.run(t, podID, pod, ctrConfig("runc2", "sleep 1000"))
	i.stopRemove(t, podID)
	if _, ok := i.runcList(t)[id2]; ok {
		t.Fatal("runc still lists a container of a removed pod")
	}
	i.assertCtrGone(t, id2)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// TestRuncHandler runs lifecycle tests written for the built-in runtime
// with every pod on the runc handler.
func TestRuncHandler(t *testing.T) {
	needRunc(t)
	for name, test := range map[string]func(*testing.T){
		"Lifecycle":     TestContainerLifecycleLogsAndLeaks,
		"ExitCodes":     TestExitCodesAndReasons,
		"StopKills":     TestStopKillsAContainerThatIgnoresSIGTERM,
		"OOMKill":       TestOOMKillIsReported,
		"Restart":       TestContainersSurviveDaemonRestartAndKeepLogging,
		"KilledMonitor": TestKilledMonitorLeavesContainersManageable,
		"Update":        TestSymlinkHostPathMountAndUpdateResources,
		"ExecTimeout":   TestExecSyncTimeoutReapsTheCommand,
		"HostPIDReaped": TestMonitorReapsOrphansOfHostPIDContainers,
		"ExecStreams":   TestExecStreams,
		"ExecHangup":    TestExecClientDisconnect,
		"Attach":        TestAttachTwice,
		"MountOptions":  TestMountOptionsApplied,
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(handlerEnv, "runc")
			test(t)
		})
	}
}

// TestTTYContainerOnEveryHandler: a TTY container's terminal (from the
// runtime's console socket) is logged and attachable, on each handler.
func TestTTYContainerOnEveryHandler(t *testing.T) {
	needRunc(t)
	for _, handler := range []string{"", "runc"} {
		t.Run("handler="+handler, func(t *testing.T) {
			i := newInstance(t, withRegistry(), func(i *instance) { i.handler = handler })
			i.pull(t, busybox)
			podID, pod := i.podWithLogs(t, "tty")
			cfg := ctrConfig("tty", `tty; while read l; do echo "got $l"; done`)
			cfg.Tty, cfg.Stdin = true, true
			id := i.run(t, podID, pod, cfg)
			path := i.ctrStatus(t, id).LogPath
			waitLogContains(t, path, "/dev/pts/", 5*time.Second)
			resp, err := i.rt.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Tty: true})
			if err != nil {
				t.Fatal(err)
			}
			inR, inW := io.Pipe()
			out := &notifyBuffer{want: "got hello", seen: make(chan struct{})}
			c, cancel := context.WithCancel(context.Background())
			defer cancel()
			go executor(t, "spdy", resp.Url).StreamWithContext(c, remotecommand.StreamOptions{Stdin: inR, Stdout: out, Tty: true})
			time.Sleep(300 * time.Millisecond)
			fmt.Fprint(inW, "hello\r")
			select {
			case <-out.seen:
			case <-time.After(10 * time.Second):
				t.Fatalf("attached terminal: no echo; got %q", out.String())
			}
			waitLogContains(t, path, "got hello", 5*time.Second)
			cancel()
			if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 2}); err != nil {
				t.Fatal(err)
			}
			_, podInf := i.status(t, podID)
			i.stopRemove(t, podID)
			i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
		})
	}
}
