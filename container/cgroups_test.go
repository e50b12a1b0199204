package container

import (
	"errors"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cgroupmount"
)

func stubCgroupHost(h cgroupmount.Host) func() {
	old := cgroupHost
	cgroupHost = func() cgroupmount.Host { return h }
	return func() { cgroupHost = old }
}

func modePtr(m NamespaceMode) *NamespaceMode { return &m }

// TestBuildSpecCgroupView: the spec's cgroup namespace and /sys/fs/cgroup
// options follow cgroup_mount_mode and cgroupns_options (the decision
// table itself is cgroupmount's, tested there).
func TestBuildSpecCgroupView(t *testing.T) {
	v2 := cgroupmount.Host{Unified: true, Options: []string{"nsdelegate", "memory_recursiveprot"}}
	base := []string{"nosuid", "noexec", "nodev", "relatime"}
	for _, c := range []struct {
		name       string
		privileged bool
		ns         *NamespaceMode
		mode       CgroupMountMode
		own        bool
		opts       []string
	}{
		{"default", false, nil, CgroupMountUnspecified, true, append(slices.Clone(base), "ro")},
		{"default privileged", true, nil, CgroupMountUnspecified, false, append(slices.Clone(base), "rw", "nsdelegate", "memory_recursiveprot")},
		{"CONTAINER privileged", true, modePtr(ModeContainer), CgroupMountUnspecified, true, append(slices.Clone(base), "rw")},
		{"NODE unprivileged", false, modePtr(ModeNode), CgroupMountUnspecified, false, append(slices.Clone(base), "ro", "nsdelegate", "memory_recursiveprot")},
		{"READ_WRITE", false, nil, CgroupMountReadWrite, true, append(slices.Clone(base), "rw")},
		{"READ_ONLY CONTAINER", false, modePtr(ModeContainer), CgroupMountReadOnly, true, append(slices.Clone(base), "ro")},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer stubCgroupHost(v2)()
			in := testInput(t)
			in.Config.Security.Privileged = c.privileged
			in.Config.Security.CgroupNS = c.ns
			in.Config.Security.CgroupMountMode = c.mode
			s := mustBuild(t, in)
			if got := ownCgroupNS(s); got != c.own {
				t.Fatalf("own cgroup namespace %v, want %v: %+v", got, c.own, s.Linux.Namespaces)
			}
			if m := findMount(t, s.Mounts, "/sys/fs/cgroup"); !slices.Equal(m.Options, c.opts) {
				t.Fatalf("/sys/fs/cgroup options %v, want %v", m.Options, c.opts)
			}
		})
	}
}

// TestCgroupViewRefusals: what the CRI forbids is ErrInvalid, what this
// node cannot give ErrFailedPrecondition, both before anything is made
// (checkAgainstPod) and in BuildSpec.
func TestCgroupViewRefusals(t *testing.T) {
	v1 := cgroupmount.Host{}
	v2 := cgroupmount.Host{Unified: true, Options: []string{"nsdelegate"}}
	for _, c := range []struct {
		name       string
		host       cgroupmount.Host
		privileged bool
		ns         *NamespaceMode
		mode       CgroupMountMode
		want       error
	}{
		{"POD", v2, false, modePtr(ModePod), CgroupMountUnspecified, ErrInvalid},
		{"TARGET", v2, false, modePtr(ModeTarget), CgroupMountUnspecified, ErrInvalid},
		{"unknown mode", v2, false, modePtr(NamespaceMode(9)), CgroupMountUnspecified, ErrInvalid},
		{"READ_ONLY privileged", v2, true, nil, CgroupMountReadOnly, ErrInvalid},
		{"READ_WRITE NODE", v2, false, modePtr(ModeNode), CgroupMountReadWrite, ErrInvalid},
		{"READ_WRITE on v1", v1, false, nil, CgroupMountReadWrite, ErrFailedPrecondition},
		{"READ_WRITE without nsdelegate", cgroupmount.Host{Unified: true}, false, nil, CgroupMountReadWrite, ErrFailedPrecondition},
		{"CONTAINER on v1", v1, true, modePtr(ModeContainer), CgroupMountUnspecified, ErrFailedPrecondition},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer stubCgroupHost(c.host)()
			sec := Security{Privileged: c.privileged, CgroupNS: c.ns, CgroupMountMode: c.mode}
			pod := PodInfo{ID: "pod1", Privileged: true}
			if err := (&Manager{}).checkAgainstPod(pod, &sec); !errors.Is(err, c.want) {
				t.Fatalf("checkAgainstPod: %v, want an error wrapping %v", err, c.want)
			}
			in := testInput(t)
			in.Config.Security = sec
			if _, err := BuildSpec(in); !errors.Is(err, c.want) {
				t.Fatalf("BuildSpec: %v, want an error wrapping %v", err, c.want)
			}
		})
	}
}

func TestOwnCgroupNS(t *testing.T) {
	for _, c := range []struct {
		ns   []specs.LinuxNamespace
		want bool
	}{
		{nil, false},
		{[]specs.LinuxNamespace{{Type: specs.MountNamespace}}, false},
		{[]specs.LinuxNamespace{{Type: specs.CgroupNamespace, Path: "/proc/1/ns/cgroup"}}, false},
		{[]specs.LinuxNamespace{{Type: specs.MountNamespace}, {Type: specs.CgroupNamespace}}, true},
	} {
		if got := ownCgroupNS(&specs.Spec{Linux: &specs.Linux{Namespaces: c.ns}}); got != c.want {
			t.Errorf("ownCgroupNS(%v) = %v, want %v", c.ns, got, c.want)
		}
	}
	if ownCgroupNS(nil) {
		t.Error("ownCgroupNS(nil)")
	}
}

// TestRestoreRefusesReadWrite: a restored container's cgroup is made after
// the delegation step: READ_WRITE is refused, other modes pass.
func TestRestoreRefusesReadWrite(t *testing.T) {
	c := &creation{}
	c.rec.Config.Security.CgroupMountMode = CgroupMountReadWrite
	if err := c.refuseDelegatedRestore(t.Context()); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("READ_WRITE restore: %v", err)
	}
	c.rec.Config.Security.CgroupMountMode = CgroupMountReadOnly
	if err := c.refuseDelegatedRestore(t.Context()); err != nil {
		t.Fatalf("READ_ONLY restore: %v", err)
	}
}
