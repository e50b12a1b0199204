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

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The pod's long-lived monitor is minicri-monitor (C), one thread; the Go
// helper it runs per request is gone once the request is served, leaving
// the pause and the container's init as its only children; its socket is
// 0600 even when the daemon runs with umask 0.
func TestMonitorIsOneSmallProcess(t *testing.T) {
	old := unix.Umask(0) // the daemon (and so the monitor) inherits it
	i := newInstance(t, withRegistry())
	unix.Umask(old)
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "small")
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("small", "echo up; sleep 1000"))
	waitLog(t, i.ctrStatus(t, id).LogPath, "up", 5*time.Second)

	mon := podInf.MonitorPID
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", mon))
	if err != nil || filepath.Base(exe) != "minicri-monitor" {
		t.Fatalf("monitor %d runs %q (%v), want minicri-monitor", mon, exe, err)
	}
	if n := procStatusField(t, mon, "Threads"); n != "1" {
		t.Fatalf("monitor has %s threads, want 1", n)
	}
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", mon, mon))
	if err != nil {
		t.Fatal(err)
	}
	var comms []string
	for _, f := range strings.Fields(string(kids)) {
		c, _ := os.ReadFile("/proc/" + f + "/comm")
		comms = append(comms, strings.TrimSpace(string(c)))
	}
	if len(comms) != 2 || !strings.Contains(strings.Join(comms, " "), "pause") {
		t.Fatalf("monitor children %v, want the pause and the container's init (no helper left)", comms)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", mon))
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	fi, err := os.Stat(filepath.Join(args[len(args)-1], "monitor.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("monitor socket mode %o under umask 0, want 600", perm)
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// waitMonitorGone waits until the pod whose monitor was killed is reported
// not ready (without its monitor it cannot start containers: the kubelet
// recreates it). The kernel takes a moment to finish the killed process
// (seconds in the VM lab's emulated CPU).
func (i *instance) waitMonitorGone(t *testing.T, podID string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := i.status(t, podID)
		if st.State == runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod with a killed monitor is still %v after 10 s", st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func procStatusField(t *testing.T, pid int, field string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

// By the time an exit is reported, everything the container wrote is in
// its log: whole lines as F entries in order, a line longer than 16 KiB as
// P chunks then F, and output ending without a newline as a P entry.
func TestMonitorLogsAllOutputBeforeTheExit(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "drain")
	_, podInf := i.status(t, podID)
	script := `i=0; while [ $i -lt 3000 ]; do echo "n $i"; i=$((i+1)); done; head -c 40000 /dev/zero | tr '\0' y; echo; echo oops >&2; printf 'no newline'; exit 3`
	id := i.run(t, podID, pod, ctrConfig("drain", script))
	st := i.waitExited(t, id, 30*time.Second)
	if st.ExitCode != 3 {
		t.Fatalf("exit code %d, want 3", st.ExitCode)
	}
	lines := readLog(t, st.LogPath) // read at once: no waiting for the log to catch up
	var out []logLine
	var errs []string
	for _, l := range lines {
		if l.stream == "stderr" {
			errs = append(errs, l.tag+" "+l.content)
			continue
		}
		out = append(out, l)
	}
	if strings.Join(errs, "|") != "F oops" {
		t.Fatalf("stderr entries %q", errs)
	}
	if len(out) < 3000 {
		t.Fatalf("%d stdout entries, want over 3000", len(out))
	}
	for n := range 3000 {
		if out[n].tag != "F" || out[n].content != "n "+strconv.Itoa(n) {
			t.Fatalf("entry %d: %+v", n, out[n])
		}
	}
	var long strings.Builder
	k := 3000
	for ; k < len(out) && out[k].tag == "P"; k++ {
		if len(out[k].content) != 16384 {
			t.Fatalf("P chunk of %d bytes, want 16384", len(out[k].content))
		}
		long.WriteString(out[k].content)
	}
	if k >= len(out)-1 {
		t.Fatalf("log ends inside the long line: %d entries", len(out))
	}
	long.WriteString(out[k].content)
	if out[k].tag != "F" || long.String() != strings.Repeat("y", 40000) {
		t.Fatalf("40000-byte line: %d bytes, last tag %s", long.Len(), out[k].tag)
	}
	if last := out[k+1]; k+2 != len(out) || last.tag != "P" || last.content != "no newline" {
		t.Fatalf("tail entries %+v, want one P \"no newline\"", out[k+1:])
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// Containers that exit at once (while the helper that started them may
// still be running, before the monitor heard back from it) have their real
// exit code and output recorded.
func TestMonitorRecordsExitsDuringStart(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "quick")
	_, podInf := i.status(t, podID)
	var ids []string
	for n := range 6 {
		ids = append(ids, i.run(t, podID, pod, ctrConfig(fmt.Sprintf("quick%d", n), fmt.Sprintf("echo bye%d; exit %d", n, 10+n))))
	}
	for n, id := range ids {
		st := i.waitExited(t, id, 10*time.Second)
		if st.ExitCode != int32(10+n) || st.Reason != "Error" {
			t.Fatalf("container %d: exit %d reason %q, want %d Error", n, st.ExitCode, st.Reason, 10+n)
		}
		if lines := readLog(t, st.LogPath); len(lines) != 1 || lines[0].content != fmt.Sprintf("bye%d", n) {
			t.Fatalf("container %d log %+v", n, lines)
		}
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// A line is in the log as soon as the container wrote it (the monitor holds
// back only an unfinished line), so a monitor killed -9 right after loses
// none; the container stays manageable without it.
func TestMonitorKilledAfterALineKeepsIt(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "kill9")
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("kill9", "echo first; echo second >&2; sleep 1000"))
	path := i.ctrStatus(t, id).LogPath
	deadline := time.Now().Add(5 * time.Second)
	for len(readLog(t, path)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("lines not logged within 5 s: %+v", readLog(t, path))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(podInf.MonitorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lines := readLog(t, path)
	got := []string{}
	for _, l := range lines {
		got = append(got, l.stream+" "+l.tag+" "+l.content)
	}
	if strings.Join(got, "|") != "stdout F first|stderr F second" {
		t.Fatalf("log after the monitor's kill: %q", got)
	}
	// The kernel takes a moment to finish the killed process: a connection
	// made meanwhile is reset rather than refused.
	i.waitMonitorGone(t, podID)
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatalf("stop without a monitor: %v", err)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("remove without a monitor: %v", err)
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// A container whose context (its directories and log path, which the C
// monitor keeps and hands back to its helper with every request) is longer
// than any fixed buffer: a long log directory and log path. StartContainer
// failed with "bad helper request: unexpected end of JSON input" when the
// monitor cut the message at 511 bytes (critest's runc-handler pass hit it).
func TestMonitorKeepsALongContainerContext(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	cfg := podConfig("longctx")
	long := strings.Repeat("d", 200)
	cfg.LogDirectory = filepath.Join(i.dir, "logs", long, long)
	podID := i.runPod(t, cfg)
	_, podInf := i.status(t, podID)
	c := ctrConfig("longctx", "echo started; sleep 1000")
	c.LogPath = strings.Repeat("l", 200) + ".log"
	id := i.run(t, podID, cfg, c)
	waitLog(t, i.ctrStatus(t, id).LogPath, "started", 5*time.Second)
	if _, err := i.rt.ReopenContainerLog(ctx(t), &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}
