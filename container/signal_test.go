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

func TestParseRealtimeAndAliases(t *testing.T) {
	for in, want := range map[string]syscall.Signal{
		"SIGRTMIN": 34, "SIGRTMIN+3": 37, "RTMINPLUS15": 49, "SIGRTMAX": 64, "SIGRTMAX-1": 63, "SIGRTMAXMINUS14": 50,
		"SIGCLD": syscall.SIGCHLD, "IOT": syscall.SIGABRT, "SIGPOLL": syscall.SIGIO,
	} {
		if got, err := parseSignal(in); err != nil || got != want {
			t.Errorf("parseSignal(%q) = %v, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"SIGRTMIN+31", "SIGRTMIN-1", "SIGRTMAX+1", "SIGRTMIN++1", "SIGRTMIN+", "SIGRTMINX"} {
		if _, err := parseSignal(bad); err == nil {
			t.Errorf("parseSignal(%q) accepted", bad)
		}
	}
}

func TestEffectiveStopSignal(t *testing.T) {
	for _, tc := range []struct {
		cfg, img string
		want     syscall.Signal
	}{{"", "", syscall.SIGTERM}, {"", "SIGQUIT", syscall.SIGQUIT}, {"SIGUSR1", "SIGQUIT", syscall.SIGUSR1}, {"bogus", "SIGINT", syscall.SIGINT}, {"", "bogus", syscall.SIGTERM}} {
		i := Info{Record: Record{Config: Config{StopSignal: tc.cfg}, ImageStopSignal: tc.img}}
		if got := i.StopSignal(); got != tc.want {
			t.Errorf("config %q image %q: %v, want %v", tc.cfg, tc.img, got, tc.want)
		}
	}
}
