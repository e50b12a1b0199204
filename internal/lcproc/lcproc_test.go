package lcproc

import (
	"testing"

	"golang.org/x/sys/unix"

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

// Rlimits, the scheduler and the I/O priority of the spec reach the
// process: libcontainer takes them from there (runc >= 1.2), not from the
// container's config.
func TestFromSpecRlimitsSchedulerIOPriority(t *testing.T) {
	p, err := FromSpec(&specs.Process{
		Rlimits:    []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 4321, Soft: 1234}, {Type: "RLIMIT_NPROC", Hard: 9, Soft: 8}},
		Scheduler:  &specs.Scheduler{Policy: specs.SchedBatch},
		IOPriority: &specs.LinuxIOPriority{Class: specs.IOPRIO_CLASS_BE, Priority: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rlimits) != 2 || p.Rlimits[0].Type != unix.RLIMIT_NOFILE || p.Rlimits[0].Hard != 4321 || p.Rlimits[0].Soft != 1234 ||
		p.Rlimits[1].Type != unix.RLIMIT_NPROC {
		t.Errorf("rlimits = %+v", p.Rlimits)
	}
	if p.Scheduler == nil || p.Scheduler.Policy != specs.SchedBatch || p.IOPriority == nil || p.IOPriority.Priority != 3 {
		t.Errorf("scheduler %+v, ioprio %+v", p.Scheduler, p.IOPriority)
	}
	if _, err := FromSpec(&specs.Process{Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_BOGUS"}}}); err == nil {
		t.Error("an unknown rlimit was accepted")
	}
}
