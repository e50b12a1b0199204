package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The host's cgroup shape decides what these tests assert: cgroup v2 only
// (unified) or v1 (hybrid), and whether systemd is PID 1, which makes
// minicri's default cgroup driver ("auto") systemd.

func hostUnified() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

func hostSystemd() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// wantDriver is the driver minicri must report with cgroup_driver = "auto".
func wantDriver() runtimeapi.CgroupDriver {
	if hostSystemd() {
		return runtimeapi.CgroupDriver_SYSTEMD
	}
	return runtimeapi.CgroupDriver_CGROUPFS
}

// procCgroup is the cgroup of pid in the hierarchy that holds memory: the
// v2 one ("0::") on a unified host, else the v1 memory controller's.
func procCgroup(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("cgroup of %d: %v", pid, err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if hostUnified() && parts[0] == "0" {
			return parts[2]
		}
		if !hostUnified() && strings.Contains(","+parts[1]+",", ",memory,") {
			return parts[2]
		}
	}
	t.Fatalf("no memory cgroup for %d in %s", pid, b)
	return ""
}

func TestCgroupRuntimeConfigReportsDriver(t *testing.T) {
	i := newInstance(t)
	resp, err := i.rt.RuntimeConfig(ctx(t), &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetLinux().GetCgroupDriver(); got != wantDriver() {
		t.Fatalf("RuntimeConfig says %v; systemd is PID 1: %v, so the auto driver is %v", got, hostSystemd(), wantDriver())
	}
}

// An OOM kill reads OOMKilled with exit code 137, whichever file the cgroup
// version keeps the kill count in (v1 memory.oom_control, v2 memory.events).
func TestCgroupOOMKilledReason(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "cg-oom")
	cfg := ctrConfig("cg-oom", "x=$(yes 0123456789012345678901234567890123456789 | head -c 200000000); echo never")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20}
	id := i.run(t, podID, pod, cfg)
	st := i.waitExited(t, id, 120*time.Second)
	if st.Reason != "OOMKilled" || st.ExitCode != 137 {
		mon, _ := os.ReadFile(filepath.Join(i.dir, "state", "sandboxes", podID, "monitor.log"))
		t.Fatalf("cgroup v2: %v; want OOMKilled/137, got %q/%d; monitor log:\n%s", hostUnified(), st.Reason, st.ExitCode, mon)
	}
}

// A container that wrote much more page cache than it holds in anonymous
// memory: its working set (usage - inactive_file) stays near its RSS (anon),
// as the kubelet's eviction ranking and kubectl top expect; page faults are
// counted.
func TestCgroupWorkingSetExcludesPageCache(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "cg-cache")
	cfg := ctrConfig("cg-cache", "dd if=/dev/zero of=/cache bs=1M count=160 2>/dev/null && echo written && sleep 300")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 512 << 20}
	id := i.run(t, podID, pod, cfg)
	waitLog(t, filepath.Join(pod.LogDirectory, cfg.LogPath), "written", 120*time.Second)
	resp, err := i.rt.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	mem := resp.GetStats().GetMemory()
	const mib = 1 << 20
	usage, ws, rss := mem.GetUsageBytes().GetValue(), mem.GetWorkingSetBytes().GetValue(), mem.GetRssBytes().GetValue()
	t.Logf("cgroup v2: %v; usage %d MiB, working set %d MiB, rss %d KiB, page faults %d (major %d)", hostUnified(),
		usage/mib, ws/mib, rss>>10, mem.GetPageFaults().GetValue(), mem.GetMajorPageFaults().GetValue())
	if usage < 100*mib {
		t.Fatalf("usage %d MiB: the 160 MiB of page cache are not charged; the test cannot see the working set", usage/mib)
	}
	if ws > 64*mib {
		t.Errorf("working set %d MiB counts the page cache (usage %d MiB, rss %d KiB)", ws/mib, usage/mib, rss>>10)
	}
	if rss == 0 || mem.GetPageFaults().GetValue() == 0 {
		t.Errorf("rss %d, page faults %d: want both counted", rss, mem.GetPageFaults().GetValue())
	}
	i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1})
}

// A pod whose parent is a systemd slice (the kubelet's cgroupDriver:
// systemd) runs in that slice: under systemd in a scope of it, the
// containers beside it and the monitor out of the daemon's cgroup; under
// cgroupfs at the path systemd would give it. Never below minicri's own
// cgroup.
func TestCgroupSlicePodParent(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	tag := fmt.Sprintf("%d%d", os.Getpid(), time.Now().UnixNano()%100000)
	slice := "minicriit-pod" + tag + ".slice"
	sliceDir := "/minicriit.slice/" + slice
	t.Cleanup(func() {
		removeCgroupDirs(sliceDir)
		removeCgroupDirs("/minicriit.slice")
	})
	cfg := podConfig("cg-slice")
	cfg.LogDirectory = filepath.Join(i.dir, "logs", "cg-slice")
	cfg.Linux.CgroupParent = slice
	podID := i.runPod(t, cfg)
	_, info := i.status(t, podID)
	ctr := i.run(t, podID, cfg, ctrConfig("c", "sleep 300"))
	ctrPID := i.ctrPID(t, ctr)

	pauseCg, ctrCg := procCgroup(t, info.PID), procCgroup(t, ctrPID)
	t.Logf("systemd: %v, v2: %v; pause in %s, container in %s, monitor in %s", hostSystemd(), hostUnified(),
		pauseCg, ctrCg, procCgroup(t, info.MonitorPID))
	wantPause, wantCtr := sliceDir+"/"+podID, sliceDir+"/"+ctr
	if hostSystemd() {
		wantPause, wantCtr = sliceDir+"/minicri-"+podID+".scope", sliceDir+"/minicri-"+ctr+".scope"
	}
	if pauseCg != wantPause || info.Cgroup != wantPause {
		t.Errorf("pause in %s (reported %s), want %s", pauseCg, info.Cgroup, wantPause)
	}
	if ctrCg != wantCtr {
		t.Errorf("container in %s, want %s", ctrCg, wantCtr)
	}
	if hostSystemd() {
		daemonCg := procCgroup(t, i.cmd.Process.Pid)
		if monCg := procCgroup(t, info.MonitorPID); monCg == daemonCg || !strings.HasSuffix(monCg, "/minicri-monitor-"+podID+".scope") {
			t.Errorf("monitor in %s (daemon in %s): want its own scope minicri-monitor-%s.scope", monCg, daemonCg, podID)
		}
	}
	// A parent that is no slice is refused under systemd, and stays a path
	// of its own (absolute) under cgroupfs.
	bad := podConfig("cg-bad")
	bad.Linux.CgroupParent = "/kubepods/burstable/pod" + tag
	if hostSystemd() {
		if _, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: bad}); err == nil || !strings.Contains(err.Error(), "InvalidArgument") {
			t.Errorf("systemd driver took cgroup parent %q: %v", bad.Linux.CgroupParent, err)
		}
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// Under systemd, restarting or losing minicri's service kills what is in the
// service's cgroup. The pods' monitors live in scopes of their own, so
// three running pods stay READY and their logs have no gap. The daemon runs
// here in a scope of its own, killed as a KillMode=control-group stop does.
func TestCgroupServiceKillSparesPods(t *testing.T) {
	if !hostSystemd() {
		t.Skip("needs systemd as PID 1 (the daemon's service cgroup, the monitors' scopes); this host has none")
	}
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	unit := fmt.Sprintf("minicri-itd-%d%d.scope", os.Getpid(), time.Now().UnixNano()%100000)
	mgr, err := cgmanager.New(&cgroups.Cgroup{Parent: "system.slice", ScopePrefix: "minicri-itd",
		Name: strings.TrimSuffix(strings.TrimPrefix(unit, "minicri-itd-"), ".scope"), Systemd: true,
		Resources: &cgroups.Resources{SkipDevices: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Apply(i.cmd.Process.Pid); err != nil {
		t.Fatalf("move the daemon into %s: %v", unit, err)
	}
	var pods, logs []string
	for n := range 3 {
		podID, cfg := i.podWithLogs(t, fmt.Sprintf("svc-%d", n))
		c := ctrConfig("count", "n=0; while true; do echo $n; n=$((n+1)); sleep 0.1; done")
		i.run(t, podID, cfg, c)
		pods, logs = append(pods, podID), append(logs, filepath.Join(cfg.LogDirectory, c.LogPath))
	}
	before := make([]int, len(logs))
	for n, l := range logs {
		waitLog(t, l, "5", 120*time.Second)
		before[n] = len(readLog(t, l))
	}
	i.conn.Close()
	if out, err := exec.Command("systemctl", "kill", "--signal=SIGKILL", unit).CombinedOutput(); err != nil {
		t.Fatalf("systemctl kill %s: %v %s", unit, err, out)
	}
	i.cmd.Wait()
	i.start()
	time.Sleep(3 * time.Second)
	for n, id := range pods {
		if st, _ := i.status(t, id); st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("pod %d is %v after the daemon's service was killed", n, st.State)
		}
		lines := readLog(t, logs[n])
		for k, l := range lines {
			if v, err := strconv.Atoi(l.content); err != nil || v != k {
				t.Fatalf("pod %d log line %d is %q: a gap", n, k, l.content)
			}
		}
		if len(lines) <= before[n] {
			t.Errorf("pod %d logged nothing after the kill (%d lines before, %d after)", n, before[n], len(lines))
		}
		t.Logf("pod %d: %d log lines before the kill, %d after, no gap", n, before[n], len(lines))
	}
}

// The pause gets Kubernetes' -998 wherever root may set it (with
// CAP_SYS_RESOURCE), and is clamped to the daemon's own value only where
// the kernel refuses.
func TestCgroupPauseOOMScoreAdj(t *testing.T) {
	i := newInstance(t)
	id := i.runPod(t, podConfig("cg-oomadj"))
	_, info := i.status(t, id)
	read := func(pid int) int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return v
	}
	want := read(i.cmd.Process.Pid)
	if hasCapSysResource(t) {
		want = -998
	}
	if got := read(info.PID); got != want {
		t.Errorf("pause oom_score_adj %d, want %d (CAP_SYS_RESOURCE: %v)", got, want, hasCapSysResource(t))
	}
	i.stopRemove(t, id)
}

func hasCapSysResource(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	return false
}
