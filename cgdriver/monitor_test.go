package cgdriver

import (
	"strings"
	"testing"
)

func TestInUnit(t *testing.T) {
	for in, want := range map[string]bool{
		"0::/system.slice/minicri.service\n":            true,
		"0::/system.slice/minicri.service/sub\n":        false,
		"0::/user.slice/user-0.slice/session-1.scope\n": true,
		"0::/system.slice\n":                            false,
		"0::/\n":                                        false,
		"12:pids:/\n1:name=systemd:/system.slice/minicri.service\n0::/\n": true,
		"12:memory:/x.service\n1:name=systemd:/user.slice/a.slice\n":      false,
		"": false,
	} {
		if got := inUnit(strings.NewReader(in)); got != want {
			t.Errorf("inUnit(%q) = %v, want %v", in, got, want)
		}
	}
}
