// Package lcproc converts an OCI spec process into a libcontainer process,
// as runc does, for container inits (in the monitor) and execs (in the
// daemon).
package lcproc

import (
	"errors"
	"math"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// FromSpec builds the libcontainer process for p.
func FromSpec(p *specs.Process) (*libcontainer.Process, error) {
	if p == nil {
		return nil, errors.New("spec has no process")
	}
	lp := &libcontainer.Process{
		Args:            p.Args,
		Env:             p.Env,
		UID:             int(p.User.UID),
		GID:             int(p.User.GID),
		Cwd:             p.Cwd,
		NoNewPrivileges: &p.NoNewPrivileges,
		AppArmorProfile: p.ApparmorProfile,
		Label:           p.SelinuxLabel,
		Scheduler:       p.Scheduler,
		IOPriority:      p.IOPriority,
	}
	rl, err := rlimits(p.Rlimits)
	if err != nil {
		return nil, err
	}
	lp.Rlimits = rl
	if lp.CPUAffinity, err = configs.ConvertCPUAffinity(p.ExecCPUAffinity); err != nil {
		return nil, err
	}
	if p.ConsoleSize != nil {
		// A terminal size beyond 65535 is clamped, not wrapped to a tiny one.
		lp.ConsoleWidth = uint16(min(p.ConsoleSize.Width, math.MaxUint16))   //nolint:gosec // clamped just here
		lp.ConsoleHeight = uint16(min(p.ConsoleSize.Height, math.MaxUint16)) //nolint:gosec // clamped just here
	}
	if c := p.Capabilities; c != nil {
		lp.Capabilities = &configs.Capabilities{
			Bounding: c.Bounding, Effective: c.Effective, Inheritable: c.Inheritable,
			Permitted: c.Permitted, Ambient: c.Ambient,
		}
	}
	for _, g := range p.User.AdditionalGids {
		lp.AdditionalGroups = append(lp.AdditionalGroups, int(g))
	}
	return lp, nil
}
