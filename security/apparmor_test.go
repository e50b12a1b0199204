package security

import (
	"errors"
	"strings"
	"testing"

	"github.com/minicri/minicri/internal/errdefs"
)

// fakeAppArmor is a host's AppArmor: enabled or not, the default profile
// loadable or not, and the kernel's loaded profiles.
type fakeAppArmor struct {
	enabled    bool
	defaultErr error
	loaded     map[string]bool
	listErr    error
}

func (f *fakeAppArmor) Enabled() bool { return f.enabled }

func (f *fakeAppArmor) DefaultProfile() (string, error) {
	if f.defaultErr != nil {
		return "", f.defaultErr
	}
	return "minicri-default", nil
}

func (f *fakeAppArmor) Loaded(name string) (bool, error) { return f.loaded[name], f.listErr }

func TestBuildAppArmor(t *testing.T) {
	on := &fakeAppArmor{enabled: true, loaded: map[string]bool{"minicri-default": true, "my-profile": true}}
	off := &fakeAppArmor{}
	noParser := &fakeAppArmor{enabled: true, defaultErr: errors.New("apparmor_parser: not found")}
	brokenList := &fakeAppArmor{enabled: true, listErr: errors.New("read error")}
	for _, tc := range []struct {
		name       string
		p          Profile
		privileged bool
		host       AppArmor
		want       string
		wantErr    error // nil: no error; errAny: an error wrapping neither domain error
	}{
		{"nothing asked: the default", Profile{Type: ProfileUnspecified}, false, on, "minicri-default", nil},
		{"nothing asked, privileged: none", Profile{Type: ProfileUnspecified}, true, on, "", nil},
		{"RuntimeDefault", Profile{Type: ProfileRuntimeDefault}, false, on, "minicri-default", nil},
		{"RuntimeDefault, privileged: none (containerd)", Profile{Type: ProfileRuntimeDefault}, true, on, "", nil},
		{"Unconfined", Profile{Type: ProfileUnconfined}, false, on, "", nil},
		{"Localhost", Profile{Type: ProfileLocalhost, Path: "my-profile"}, false, on, "my-profile", nil},
		{"Localhost, legacy prefix", Profile{Type: ProfileLocalhost, Path: "localhost/my-profile"}, false, on, "my-profile", nil},
		{"Localhost, privileged: applied", Profile{Type: ProfileLocalhost, Path: "my-profile"}, true, on, "my-profile", nil},
		{"Localhost not loaded", Profile{Type: ProfileLocalhost, Path: "nope"}, false, on, "", errdefs.ErrFailedPrecondition},
		{"Localhost empty", Profile{Type: ProfileLocalhost}, false, on, "", errdefs.ErrInvalid},
		{"Localhost with a newline", Profile{Type: ProfileLocalhost, Path: "my-profile\nx"}, false, on, "", errdefs.ErrInvalid},
		{"Localhost, profile list unreadable", Profile{Type: ProfileLocalhost, Path: "my-profile"}, false, brokenList, "", errAny},
		{"ref on RuntimeDefault", Profile{Type: ProfileRuntimeDefault, Path: "my-profile"}, false, on, "", errdefs.ErrInvalid},
		{"default profile not loadable: refused, not unconfined", Profile{Type: ProfileRuntimeDefault}, false, noParser, "", errdefs.ErrFailedPrecondition},
		{"nothing asked, default not loadable: refused", Profile{Type: ProfileUnspecified}, false, noParser, "", errdefs.ErrFailedPrecondition},
		{"unknown type", Profile{Type: 42}, false, on, "", errdefs.ErrInvalid},
		{"no AppArmor, nothing asked", Profile{Type: ProfileUnspecified}, false, off, "", nil},
		{"no AppArmor, Unconfined", Profile{Type: ProfileUnconfined}, false, off, "", nil},
		{"no AppArmor, nil host", Profile{Type: ProfileUnspecified}, false, nil, "", nil},
		{"no AppArmor, RuntimeDefault: the host's default, none", Profile{Type: ProfileRuntimeDefault}, false, off, "", nil},
		{"no AppArmor, zero Profile", Profile{}, false, off, "", nil},
		{"no AppArmor, Localhost: refused", Profile{Type: ProfileLocalhost, Path: "my-profile"}, false, off, "", errdefs.ErrFailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppArmorProfile(tc.p, tc.privileged, tc.host)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr == errAny:
				if err == nil || errors.Is(err, errdefs.ErrInvalid) || errors.Is(err, errdefs.ErrFailedPrecondition) {
					t.Fatalf("error %v, want an internal one", err)
				}
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("profile %q, want %q", got, tc.want)
			}
		})
	}
}

var errAny = errors.New("any internal error")

// TestBuildAppArmorNamesTheMissingProfile: the kubelet shows the message.
func TestBuildAppArmorNamesTheMissingProfile(t *testing.T) {
	_, err := AppArmorProfile(Profile{Type: ProfileLocalhost, Path: "localhost/cri-missing"}, false,
		&fakeAppArmor{enabled: true})
	if err == nil || !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), `"cri-missing"`) {
		t.Fatalf("error %v, want FailedPrecondition naming \"cri-missing\"", err)
	}
}
