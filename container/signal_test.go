package container

import (
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "term": syscall.SIGTERM, "9": syscall.SIGKILL, "SIGUSR1": syscall.SIGUSR1, "QUIT": syscall.SIGQUIT} {
		if got, err := parseSignal(in); err != nil || got != want {
			t.Errorf("parseSignal(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "SIGNOPE", "0", "99"} {
		if _, err := parseSignal(bad); err == nil {
			t.Errorf("parseSignal(%q) accepted", bad)
		}
	}
}
