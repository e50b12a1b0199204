package container

import (
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestBuildCapabilities(t *testing.T) {
	host := []string{"CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_KILL"}
	def := defaultCapabilities()
	without := func(caps []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return slices.Contains(drop, c) })
	}
	tests := []struct {
		name    string
		sec     Security
		want    []string
		ambient []string
		invalid bool
	}{
		{name: "default", want: def},
		{name: "add any spelling", sec: Security{CapAdd: []string{"NET_ADMIN", "sys_time", "CAP_SYS_PTRACE", "cap_chown"}},
			want: append(slices.Clone(def), "CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_SYS_PTRACE")},
		{name: "drop", sec: Security{CapDrop: []string{"NET_RAW", "cap_chown", "SYS_ADMIN"}}, want: without(def, "CAP_NET_RAW", "CAP_CHOWN")},
		{name: "add ALL", sec: Security{CapAdd: []string{"ALL"}}, want: host},
		{name: "add all lower case, drop one", sec: Security{CapAdd: []string{"all"}, CapDrop: []string{"CHOWN"}}, want: without(host, "CAP_CHOWN")},
		{name: "drop ALL", sec: Security{CapDrop: []string{"ALL"}}, want: nil},
		{name: "drop ALL add one", sec: Security{CapDrop: []string{"ALL"}, CapAdd: []string{"NET_BIND_SERVICE"}}, want: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "add ALL and drop ALL", sec: Security{CapAdd: []string{"ALL"}, CapDrop: []string{"ALL"}}, want: nil},
		{name: "drop wins over add", sec: Security{CapAdd: []string{"SYS_TIME"}, CapDrop: []string{"SYS_TIME"}}, want: def},
		{name: "privileged", sec: Security{Privileged: true, CapDrop: []string{"ALL"}}, want: host},
		{name: "ambient only when held", sec: Security{AmbientAdd: []string{"NET_BIND_SERVICE", "SYS_ADMIN"}}, want: def, ambient: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "ambient after add", sec: Security{CapAdd: []string{"SYS_ADMIN"}, AmbientAdd: []string{"cap_sys_admin"}},
			want: append(slices.Clone(def), "CAP_SYS_ADMIN"), ambient: []string{"CAP_SYS_ADMIN"}},
		{name: "empty name", sec: Security{CapAdd: []string{""}}, invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := buildCapabilities(&tt.sec, host)
			if tt.invalid {
				wantInvalid(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, set := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective, "permitted": c.Permitted} {
				if !slices.Equal(set, tt.want) {
					t.Fatalf("%s = %v, want %v", name, set, tt.want)
				}
			}
			if !slices.Equal(c.Ambient, tt.ambient) || !slices.Equal(c.Inheritable, tt.ambient) {
				t.Fatalf("ambient = %v, inheritable = %v, want both %v", c.Ambient, c.Inheritable, tt.ambient)
			}
		})
	}
}

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

func TestHostCapabilities(t *testing.T) {
	caps, err := HostCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	// Compare with the bounding set the kernel reports.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var bnd uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(caps) != bits.OnesCount64(bnd) {
		t.Fatalf("HostCapabilities() = %d caps %v, CapBnd %#x has %d", len(caps), caps, bnd, bits.OnesCount64(bnd))
	}
	for _, c := range caps {
		if !strings.HasPrefix(c, "CAP_") || strings.ToUpper(c) != c {
			t.Fatalf("bad capability name %q", c)
		}
	}
	if os.Geteuid() == 0 && bnd&1 != 0 && !slices.Contains(caps, "CAP_CHOWN") {
		t.Fatalf("CAP_CHOWN missing from %v", caps)
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
		{"nil means the defaults without a pod user namespace", Security{}, false, defaultMaskedPaths(), defaultReadonlyPaths()},
		{"empty means the defaults without a pod user namespace", Security{MaskedPaths: []string{}, ReadonlyPaths: []string{}}, false,
			defaultMaskedPaths(), defaultReadonlyPaths()},
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
