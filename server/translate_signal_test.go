package server

import (
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSignalRoundTrip(t *testing.T) {
	for v := range runtimeapi.Signal_name {
		s := runtimeapi.Signal(v)
		if s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
			continue
		}
		name := signalFromCRI(s)
		if name == "" {
			t.Fatalf("%v has no name", s)
		}
		got := signalToCRI(mustParse(t, name))
		// Aliases come back as the signal's canonical name.
		alias := map[runtimeapi.Signal]runtimeapi.Signal{
			runtimeapi.Signal_SIGNAL_SIGCLD: runtimeapi.Signal_SIGNAL_SIGCHLD, runtimeapi.Signal_SIGNAL_SIGIOT: runtimeapi.Signal_SIGNAL_SIGABRT,
			runtimeapi.Signal_SIGNAL_SIGPOLL: runtimeapi.Signal_SIGNAL_SIGIO,
		}
		want := s
		if a, ok := alias[s]; ok {
			want = a
		}
		if got != want {
			t.Errorf("%v -> %q -> %v", s, name, got)
		}
	}
	if signalToCRI(syscall.SIGTERM) != runtimeapi.Signal_SIGNAL_SIGTERM || signalToCRI(36) != runtimeapi.Signal_SIGNAL_SIGRTMINPLUS2 {
		t.Fatal("SIGTERM or SIGRTMIN+2 mistranslated")
	}
}

// mustParse reads the names signalFromCRI produces (container parses the
// same way, aliases included).
func mustParse(t *testing.T, name string) syscall.Signal {
	t.Helper()
	if n, err := strconv.Atoi(name); err == nil {
		return syscall.Signal(n)
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig
	}
	if sig, ok := map[string]syscall.Signal{"SIGCLD": unix.SIGCHLD, "SIGIOT": unix.SIGABRT, "SIGPOLL": unix.SIGIO}[name]; ok {
		return sig
	}
	t.Fatalf("unparsable %q", name)
	return 0
}
