package container

import (
	"errors"
	"testing"
)

func TestCheckMountOptions(t *testing.T) {
	ok := Mount{ContainerPath: "/a", HostPath: "/tmp", MountOptions: []string{"noexec", "nodev", "nosuid"}}
	if err := validateMounts([]Mount{ok}); err != nil {
		t.Errorf("noexec,nodev,nosuid: %v", err)
	}
	for _, bad := range []string{"exec", "suid", "dev", "noexec,nosuid", "remount", "bind", "ro", "mode=0777", ""} {
		m := Mount{ContainerPath: "/a", HostPath: "/tmp", MountOptions: []string{"noexec", bad}}
		if err := validateMounts([]Mount{m}); !errors.Is(err, ErrInvalid) {
			t.Errorf("option %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestAnnotatedImageName(t *testing.T) {
	if got := annotatedImageName(&Config{Image: "sha256:abc", UserSpecifiedImage: "busybox:1"}); got != "busybox:1" {
		t.Errorf("with user_specified_image: %q", got)
	}
	if got := annotatedImageName(&Config{Image: "busybox:1"}); got != "busybox:1" {
		t.Errorf("without: %q", got)
	}
}
