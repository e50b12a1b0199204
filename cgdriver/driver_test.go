package cgdriver

import (
	"errors"
	"testing"
)

func TestParent(t *testing.T) {
	for _, c := range []struct {
		d          Driver
		in, want   string
		wantErrSub bool
	}{
		{Systemd, "kubepods-burstable-pod12.slice", "kubepods-burstable-pod12.slice", false},
		{Systemd, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice", "kubepods-burstable-pod12.slice", false},
		{Systemd, "/kubepods/burstable/pod12", "", true},
		{Systemd, "/elsewhere.slice/kubepods-burstable-pod12.slice", "", true},
		{Systemd, "a:b:c", "", true},
		{Systemd, "", "", false},
		// cgroupfs: a slice name goes where systemd would put it, never
		// below the daemon's own cgroup.
		{Cgroupfs, "kubepods-burstable-pod12.slice", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice", false},
		{Cgroupfs, "/kubepods/burstable/pod12", "/kubepods/burstable/pod12", false},
		{Cgroupfs, "relative/x", "/relative/x", false},
		{Cgroupfs, "/a/../../b", "", true},
		{Cgroupfs, "/a:b:c", "", true},
	} {
		got, err := c.d.Parent(c.in)
		if c.wantErrSub {
			if !errors.Is(err, ErrInvalidParent) {
				t.Errorf("%s Parent(%q) = %q, %v; want ErrInvalidParent", c.d, c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s Parent(%q) = %q, %v; want %q", c.d, c.in, got, err, c.want)
		}
	}
}

func TestDefaultParent(t *testing.T) {
	for _, c := range []struct {
		d        Driver
		in, want string
	}{
		{Systemd, "/minicri", "minicri.slice"},
		{Systemd, "/minicri-it-1-2", "minicri-it-1-2.slice"},
		{Systemd, "", "minicri.slice"},
		{Systemd, "/a/b", "minicri.slice"},
		{Cgroupfs, "/minicri", "/minicri"},
		{Cgroupfs, "", "/minicri"},
	} {
		if got := c.d.DefaultParent(c.in); got != c.want {
			t.Errorf("%s DefaultParent(%q) = %q, want %q", c.d, c.in, got, c.want)
		}
	}
}

func TestPaths(t *testing.T) {
	pod := Systemd.Path("kubepods-besteffort-pod1.slice", "abc")
	if pod != "kubepods-besteffort-pod1.slice:minicri:abc" || !IsSystemd(pod) {
		t.Fatalf("systemd path %q", pod)
	}
	if got := Sibling(pod, "def"); got != "kubepods-besteffort-pod1.slice:minicri:def" {
		t.Errorf("Sibling = %q", got)
	}
	if got := FSPath(pod); got != "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/minicri-abc.scope" {
		t.Errorf("FSPath = %q", got)
	}
	c := Config(pod)
	if !c.Systemd || c.Parent != "kubepods-besteffort-pod1.slice" || c.ScopePrefix != "minicri" || c.Name != "abc" {
		t.Errorf("Config = %+v", c)
	}
	fs := Cgroupfs.Path("/kubepods/pod1", "abc")
	if IsSystemd(fs) || Sibling(fs, "def") != "/kubepods/pod1/def" || FSPath(fs) != fs || Config(fs).Path != fs {
		t.Errorf("cgroupfs path %q: sibling %q", fs, Sibling(fs, "def"))
	}
}
