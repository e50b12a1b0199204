package checkpoint

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// checkLSM refuses a thread whose LSM label CRIU would restore and that is
// not the request's: CRIU writes each thread's lsm_profile from its core
// image to /proc/<tid>/attr/current, as root (a genuine dump records the
// AppArmor profile without its mode, or the SELinux context, and nothing
// for an unconfined task). The request's label is also handed to CRIU
// (ocirt's LsmProfile), which then rewrites the images' labels
// to it. A socket-creation label or AppArmor data, which minicri never
// sets, is refused whatever the request.
func checkLSM(cr interface {
	GetLsmProfile() string
	GetLsmSockcreate() string
	GetApparmorData() []byte
}, p *specs.Process) error {
	want := p.ApparmorProfile
	if want == "" {
		want = p.SelinuxLabel
	}
	switch got := cr.GetLsmProfile(); {
	case got != want && want == "":
		return fmt.Errorf("has LSM label %q; the request gives none", got)
	case got != want:
		return fmt.Errorf("has LSM label %q, not the request's %q", got, want)
	case cr.GetLsmSockcreate() != "":
		return fmt.Errorf("has LSM socket label %q, which the request does not give", cr.GetLsmSockcreate())
	case len(cr.GetApparmorData()) != 0:
		return fmt.Errorf("has AppArmor LSM data, which the request does not give")
	}
	return nil
}
