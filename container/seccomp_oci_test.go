package container

import (
	"errors"
	"fmt"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

type fakeOCIProfiles map[string]*specs.LinuxSeccomp

func (f fakeOCIProfiles) Lookup(ref string) (string, *specs.LinuxSeccomp, error) {
	if p, ok := f[ref]; ok {
		return "sha256:profile", p, nil
	}
	return "", nil, fmt.Errorf("%w: %s not present", ErrFailedPrecondition, ref)
}

// TestResolveSeccompOCI: an OCI profile is recorded with the filter it
// resolved to; an absent one (or no store) fails the create as
// FailedPrecondition; another type never carries a resolved filter.
func TestResolveSeccompOCI(t *testing.T) {
	sc := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}
	m := &Manager{opts: Options{OCIProfiles: fakeOCIProfiles{"r@sha256:1": sc}}}
	p := Profile{Type: ProfileOCI, Ref: "r@sha256:1"}
	if err := m.resolveSeccompOCI(&p); err != nil || p.OCI != sc || p.Digest != "sha256:profile" {
		t.Fatalf("resolve: %v %+v", err, p)
	}
	for _, mm := range []*Manager{m, {}} {
		p := Profile{Type: ProfileOCI, Ref: "r@sha256:2"}
		if err := mm.resolveSeccompOCI(&p); !errors.Is(err, ErrFailedPrecondition) {
			t.Errorf("absent: %v", err)
		}
	}
	forged := Profile{Type: ProfileRuntimeDefault, Digest: "sha256:x", OCI: sc}
	if err := m.resolveSeccompOCI(&forged); err != nil || forged.OCI != nil || forged.Digest != "" {
		t.Errorf("RuntimeDefault kept a resolved filter: %+v", forged)
	}
}
