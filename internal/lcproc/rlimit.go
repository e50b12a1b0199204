package lcproc

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// rlimitTypes are the rlimits an OCI spec may name, as runc knows them.
var rlimitTypes = map[string]int{
	"RLIMIT_CPU":        unix.RLIMIT_CPU,
	"RLIMIT_FSIZE":      unix.RLIMIT_FSIZE,
	"RLIMIT_DATA":       unix.RLIMIT_DATA,
	"RLIMIT_STACK":      unix.RLIMIT_STACK,
	"RLIMIT_CORE":       unix.RLIMIT_CORE,
	"RLIMIT_RSS":        unix.RLIMIT_RSS,
	"RLIMIT_NPROC":      unix.RLIMIT_NPROC,
	"RLIMIT_NOFILE":     unix.RLIMIT_NOFILE,
	"RLIMIT_MEMLOCK":    unix.RLIMIT_MEMLOCK,
	"RLIMIT_AS":         unix.RLIMIT_AS,
	"RLIMIT_LOCKS":      unix.RLIMIT_LOCKS,
	"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_MSGQUEUE":   unix.RLIMIT_MSGQUEUE,
	"RLIMIT_NICE":       unix.RLIMIT_NICE,
	"RLIMIT_RTPRIO":     unix.RLIMIT_RTPRIO,
	"RLIMIT_RTTIME":     unix.RLIMIT_RTTIME,
}

// rlimits converts the spec's rlimits (libcontainer takes them from the
// process since runc 1.2; without them the process inherits minicri's).
func rlimits(in []specs.POSIXRlimit) ([]configs.Rlimit, error) {
	var out []configs.Rlimit
	for _, l := range in {
		t, ok := rlimitTypes[l.Type]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q", l.Type)
		}
		out = append(out, configs.Rlimit{Type: t, Hard: l.Hard, Soft: l.Soft})
	}
	return out, nil
}
