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
