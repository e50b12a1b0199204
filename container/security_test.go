package container

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minicri/minicri/security"
)

func TestBuildSpecCapabilities(t *testing.T) {
	in := testInput(t)
	in.Config.Security.CapAdd = []string{"NET_ADMIN"}
	s := mustBuild(t, in)
	if !slices.Contains(s.Process.Capabilities.Bounding, "CAP_NET_ADMIN") {
		t.Fatalf("caps = %+v", s.Process.Capabilities)
	}
	in.Config.Security.Privileged = true
	s = mustBuild(t, in)
	if !slices.Equal(s.Process.Capabilities.Effective, in.HostCaps) {
		t.Fatalf("privileged caps = %+v, want %v", s.Process.Capabilities, in.HostCaps)
	}
}

func TestMaskedAndReadonlyPaths(t *testing.T) {
	tests := []struct {
		name             string
		sec              Security
		userns           bool
		masked, readonly []string
	}{
		// What the kubelet sends for procMount Unmasked arrives as nil: no
		// defaults may creep in (containerd starts from empty lists).
		{"nil means none in a pod user namespace", Security{}, true, nil, nil},
		{"empty means none in a pod user namespace", Security{MaskedPaths: []string{}, ReadonlyPaths: []string{}}, true, []string{}, []string{}},
		// Without one (Unmasked needs hostUsers: false), none would leave
		// root a writable /proc/sys: the kubelet's defaults.
		{"nil means the defaults without a pod user namespace", Security{}, false, security.DefaultMaskedPaths(), security.DefaultReadonlyPaths()},
		{"empty means the defaults without a pod user namespace", Security{MaskedPaths: []string{}, ReadonlyPaths: []string{}}, false,
			security.DefaultMaskedPaths(), security.DefaultReadonlyPaths()},
		{"kubelet defaults", Security{MaskedPaths: []string{"/proc/kcore", "/proc/keys"}, ReadonlyPaths: []string{"/proc/sys"}}, false,
			[]string{"/proc/kcore", "/proc/keys"}, []string{"/proc/sys"}},
		{"overrides", Security{MaskedPaths: []string{"/bin/ls"}, ReadonlyPaths: []string{"/tmp"}}, true, []string{"/bin/ls"}, []string{"/tmp"}},
		{"privileged", Security{Privileged: true, MaskedPaths: []string{"/x"}, ReadonlyPaths: []string{"/y"}}, false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			if tt.userns {
				in.Pod.UserNS = &IDMappings{UIDs: []IDMapping{{HostID: 100000, Length: 65536}}, GIDs: []IDMapping{{HostID: 100000, Length: 65536}}}
			}
			in.Config.Security.Privileged = tt.sec.Privileged
			in.Config.Security.MaskedPaths = tt.sec.MaskedPaths
			in.Config.Security.ReadonlyPaths = tt.sec.ReadonlyPaths
			s := mustBuild(t, in)
			if !slices.Equal(s.Linux.MaskedPaths, tt.masked) || (s.Linux.MaskedPaths == nil) != (tt.masked == nil) {
				t.Fatalf("masked = %#v, want %#v", s.Linux.MaskedPaths, tt.masked)
			}
			if !slices.Equal(s.Linux.ReadonlyPaths, tt.readonly) || (s.Linux.ReadonlyPaths == nil) != (tt.readonly == nil) {
				t.Fatalf("readonly = %#v, want %#v", s.Linux.ReadonlyPaths, tt.readonly)
			}
		})
	}
}

func TestCheckAgainstPod(t *testing.T) {
	m := &Manager{store: newStore()}
	for id, pod := range map[string]string{"aaaa1111": "podA", "bbbb2222": "podB"} {
		m.store.add(newContainer(Record{ID: id, PodID: pod}, filepath.Join(t.TempDir(), id)))
	}
	plain := PodInfo{ID: "podA", NetNSPath: "/run/netns/x"}
	host := PodInfo{ID: "podA", HostPID: true, HostIPC: true, Privileged: true}
	userns := PodInfo{ID: "podA", NetNSPath: "/run/netns/x", UserNS: &IDMappings{}}
	privUserns := userns
	privUserns.Privileged = true
	ok := []struct {
		pod PodInfo
		sec Security
	}{
		{plain, Security{}},
		{plain, Security{PID: ModeContainer}},
		{plain, Security{PID: ModeTarget, TargetID: "aaaa"}},
		{host, Security{PID: ModeNode, IPC: ModeNode, Network: ModeNode, Privileged: true}},
		{host, Security{PID: ModePod}},
	}
	for _, c := range ok {
		if err := m.checkAgainstPod(c.pod, &c.sec); err != nil {
			t.Errorf("%+v in %+v: %v", c.sec, c.pod, err)
		}
	}
	sec := Security{PID: ModeTarget, TargetID: "aaaa"}
	if m.checkAgainstPod(plain, &sec); sec.TargetID != "aaaa1111" {
		t.Errorf("target prefix not resolved to the full ID: %q", sec.TargetID)
	}
	bad := map[string]struct {
		pod PodInfo
		sec Security
	}{
		"privileged in plain pod":  {plain, Security{Privileged: true}},
		"privileged in userns pod": {privUserns, Security{Privileged: true}},
		"host PID in plain pod":    {plain, Security{PID: ModeNode}},
		"host net in plain pod":    {plain, Security{Network: ModeNode}},
		"host IPC in plain pod":    {plain, Security{IPC: ModeNode}},
		"target in another pod":    {plain, Security{PID: ModeTarget, TargetID: "bbbb2222"}},
		"target without ID":        {plain, Security{PID: ModeTarget}},
	}
	for name, c := range bad {
		if err := m.checkAgainstPod(c.pod, &c.sec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if err := m.checkAgainstPod(plain, &Security{PID: ModeTarget, TargetID: "cccc"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown target: got %v, want ErrNotFound", err)
	}
}
