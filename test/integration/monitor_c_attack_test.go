package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue 24, item 7: a pid a helper names is a number the monitor will
// kill(2). "4294967295" cast to pid_t is -1 (every process the monitor may
// signal), "4294967296" is 0 (the monitor's own process group), and
// "4294967297" is 1 (init); a process that is not the monitor's is no
// container of its. Each is refused at create, and a kill of that container
// afterwards signals nothing: not the sentinel, not the init, not the
// monitor (which still answers). The monitor runs in its own PID namespace
// (monitor_c_sandbox_test.go), so on a monitor without the check the attack
// reaches nothing outside it.
func TestMonitorCRefusesBadPids(t *testing.T) {
	pids := []string{"4294967295", "4294967296", "4294967297", "18446744073709551615", "2147483648",
		"99999999999999999999", "-1", "0", "1", "12abc", "sentinel"}
	for _, pid := range pids {
		t.Run(pid, func(t *testing.T) {
			s := startMonSandbox(t)
			if pid == "sentinel" {
				pid = s.sentinelPID(t)
			}
			r := s.call(t, map[string]any{"op": "create", "id": "evil", "fake": map[string]any{"mode": "pid", "pid": pid}}, 10*time.Second)
			// The kill's answer may never come from a monitor without the
			// check (it waits for an exit that cannot come): do not wait for it.
			kr := s.call(t, map[string]any{"op": "kill", "id": "evil", "signal": 15, "timeout": 200_000_000}, time.Second)
			time.Sleep(300 * time.Millisecond) // the grace period, then SIGKILL
			st := s.call(t, map[string]any{"op": "status"}, 5*time.Second)
			if got := s.signals(); len(got) > 0 {
				t.Errorf("pid %s: the monitor signalled processes it does not own: %v", pid, got)
			}
			if st == nil || st["pause"] == nil {
				t.Errorf("pid %s: the monitor no longer answers (status %v)", pid, st)
			}
			if msg, _ := r["error"].(string); !strings.Contains(msg, "pid") {
				t.Errorf("pid %s: create answered %v, want an error naming the pid", pid, r)
			}
			if msg, _ := kr["error"].(string); !strings.Contains(msg, "unknown to this monitor") {
				t.Errorf("pid %s: kill answered %v, want the container unknown", pid, kr)
			}
		})
	}
}

// Issue 24, item 7: the exit status of a child the monitor reaped before a
// helper named it is kept for that helper, but in a host-PID pod the monitor
// also reaps the containers' orphans, and a new container's init may get the
// pid of one: it must not be reported exited with the orphan's code (42)
// while it runs. The orphan is reaped before the create (kept by the old
// monitor forever), or during it (while the create's helper runs, as an exit
// that helper could have named).
func TestMonitorCStaleExitIsNotANewContainers(t *testing.T) {
	for _, when := range []string{"before", "during"} {
		t.Run(when, func(t *testing.T) {
			s := startMonSandbox(t)
			fake := map[string]any{"mode": "stale-during"}
			if when == "before" {
				o := s.call(t, map[string]any{"op": "orphan", "id": "o"}, 20*time.Second)
				pid, ok := o["pid"].(float64)
				if !ok {
					t.Fatalf("orphan: %v", o)
				}
				fake = map[string]any{"mode": "reuse", "pid": fmt.Sprint(int(pid))}
			}
			r := s.call(t, map[string]any{"op": "create", "id": "victim", "fake": fake}, 20*time.Second)
			pid := ctrPID(t, r)
			// An exit would be recorded at once (the monitor's "exited" helper is quick).
			time.Sleep(500 * time.Millisecond)
			in := s.call(t, map[string]any{"op": "inspect", "id": "victim"}, 5*time.Second)
			if c, _ := in["container"].(map[string]any); c == nil || c["exit"] != nil {
				t.Errorf("container with pid %d (running: %v) reported %v, want no exit", pid, s.running(pid), in)
			}
			if !s.running(pid) {
				t.Fatalf("the container's process %d is not running", pid)
			}
			k := s.call(t, map[string]any{"op": "kill", "id": "victim", "signal": 9}, 20*time.Second)
			if code := exitCode(k); code != 137 {
				t.Errorf("kill -9: exit %v, want 137 (%v)", code, k)
			}
		})
	}
}

// What the stale-exit fix must keep: a container whose init exited (and was
// reaped by the monitor) before its helper named it has its real exit code.
func TestMonitorCKeepsAnExitBeforeTheCreateAnswer(t *testing.T) {
	s := startMonSandbox(t)
	r := s.call(t, map[string]any{"op": "create", "id": "quick", "fake": map[string]any{"mode": "early", "code": 7}}, 20*time.Second)
	ctrPID(t, r)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		in := s.call(t, map[string]any{"op": "inspect", "id": "quick"}, 5*time.Second)
		if code := exitCode(in); code == 7 {
			return
		} else if code >= 0 || time.Now().After(deadline) {
			t.Fatalf("inspect %v, want exit code 7", in)
		}
	}
}

func ctrPID(t *testing.T, r map[string]any) int {
	t.Helper()
	c, _ := r["container"].(map[string]any)
	pid, ok := c["pid"].(float64)
	if !ok {
		t.Fatalf("create answered %v, want a container", r)
	}
	return int(pid)
}

// exitCode is the exit code in a {"container":...} answer, -1 without one.
func exitCode(r map[string]any) int {
	c, _ := r["container"].(map[string]any)
	e, _ := c["exit"].(map[string]any)
	code, ok := e["code"].(float64)
	if !ok {
		return -1
	}
	return int(code)
}
