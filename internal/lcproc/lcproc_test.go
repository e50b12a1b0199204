package lcproc

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestFromSpec(t *testing.T) {
	p, err := FromSpec(&specs.Process{
		Args: []string{"sh"}, Env: []string{"A=1"}, Cwd: "/w", NoNewPrivileges: true,
		User:         specs.User{UID: 1000, GID: 100, AdditionalGids: []uint32{5, 6}},
		Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_KILL"}, Effective: []string{"CAP_KILL"}},
		ConsoleSize:  &specs.Box{Width: 80, Height: 24},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != 1000 || p.GID != 100 || len(p.AdditionalGroups) != 2 || p.Cwd != "/w" || !*p.NoNewPrivileges ||
		p.Capabilities.Bounding[0] != "CAP_KILL" || p.ConsoleWidth != 80 || p.Args[0] != "sh" {
		t.Fatalf("bad conversion: %+v", p)
	}
	if _, err := FromSpec(nil); err == nil {
		t.Fatal("nil process must fail")
	}
}
