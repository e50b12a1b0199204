package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A stop that comes while the pod's start is still under way (a daemon
// killed in RunPodSandbox: its successor's recovery stops the half-made pod
// its record shows) stopped nothing and let the monitor exit; the pause the
// start went on to make outlived it, a child of init (two such pauses
// outlived the 30-minute soak of issue 23). The stop waits for the start,
// kills what it made, then answers.
func TestMonitorCStopDuringPodStart(t *testing.T) {
	t.Setenv(podStartDelay, "1s")
	s, ready := launchMonSandbox(t)
	ready.Close() // the daemon that launched it is gone
	sock := filepath.Join(s.dir, "monitor.sock")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no monitor socket\n%s", s.logs())
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, "pause.pid")); err == nil {
		t.Fatal("the pause started before the stop: the delay did not hold")
	}
	resp := s.call(t, map[string]any{"op": "stop"}, 20*time.Second)
	if resp == nil || resp["error"] != nil {
		t.Fatalf("stop: %v", resp)
	}
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(s.dir, "pause.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		if pid == 0 && time.Now().After(deadline) {
			t.Fatalf("the pod's start never made its pause\n%s", s.logs())
		}
	}
	for deadline := time.Now().Add(5 * time.Second); s.running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pause %d outlived the stop of its pod\n%s", pid, s.logs())
		}
	}
}

// A delete of a container whose create is still under way (a daemon killed
// in CreateContainer: its successor's recovery deletes the container its
// record shows half made) answered "already gone" at once; the create then
// ended, and the monitor kept a container nobody knew: its init waited for
// a start for ever and, once the pod stopped, its runc state and cgroups
// stayed (seven containers' cgroups and six runc records outlived their pods
// in the soaks of issue 23). The delete waits for the create, then deletes
// what it made.
func TestMonitorCDeleteDuringCreate(t *testing.T) {
	s := startMonSandbox(t)
	created := make(chan map[string]any, 1)
	go func() {
		created <- s.call(t, map[string]any{"op": "create", "id": "half", "fake": map[string]any{"mode": "slow"}}, 20*time.Second)
	}()
	time.Sleep(300 * time.Millisecond) // the create's helper is at work
	if _, err := os.Stat(filepath.Join(s.dir, "slow.pid")); err == nil {
		t.Fatal("the create ended before the delete: the delay did not hold")
	}
	resp := s.call(t, map[string]any{"op": "delete", "id": "half"}, 20*time.Second)
	if resp == nil || resp["error"] != nil {
		t.Fatalf("delete: %v", resp)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "slow.pid"))
	if err != nil {
		t.Fatalf("the delete was answered before the create ended: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	for deadline := time.Now().Add(5 * time.Second); s.running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the container's process %d outlived its delete\n%s", pid, s.logs())
		}
	}
	if r := s.call(t, map[string]any{"op": "inspect", "id": "half"}, 5*time.Second); r == nil || r["error"] == nil {
		t.Fatalf("inspect after the delete: %v, want unknown", r)
	}
	<-created
}
