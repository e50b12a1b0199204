package container

import (
	"errors"
	"testing"
)

// defaultOnlyAppArmor is a host whose kernel enforces AppArmor and has
// loaded minicri's default profile alone.
type defaultOnlyAppArmor struct{}

func (defaultOnlyAppArmor) Enabled() bool                    { return true }
func (defaultOnlyAppArmor) DefaultProfile() (string, error)  { return "minicri-default", nil }
func (defaultOnlyAppArmor) Loaded(name string) (bool, error) { return name == "minicri-default", nil }

func TestBuildSpecSetsAppArmorProfile(t *testing.T) {
	in := testInput(t)
	in.AppArmor = defaultOnlyAppArmor{}
	in.Config.Security.AppArmor = Profile{Type: ProfileRuntimeDefault}
	if got := mustBuild(t, in).Process.ApparmorProfile; got != "minicri-default" {
		t.Fatalf("Process.ApparmorProfile = %q, want minicri-default", got)
	}
	in.Config.Security.AppArmor = Profile{Type: ProfileLocalhost, Path: "absent"}
	if _, err := BuildSpec(in); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("BuildSpec with an unloaded profile: %v, want FailedPrecondition", err)
	}
}
