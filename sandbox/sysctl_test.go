package sandbox

import (
	"errors"
	"slices"
	"testing"
)

// VLAN interfaces have a "." in their name: in the dotted form it is
// written "/", and the pause must write /proc/sys/net/ipv4/conf/eno2.100/...
func TestVLANSysctlsReachTheInterfacesFile(t *testing.T) {
	for _, name := range []string{"net.ipv4.conf.eno2/100.rp_filter", "net/ipv4/conf/eno2.100/rp_filter"} {
		cfg := Config{Metadata: Metadata{Name: "n", Namespace: "ns", UID: "u"}, Sysctls: map[string]string{name: "2"}}
		if err := validate(&cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := Record{Config: cfg}.monitorSpec(&Manager{}).Pause.Sysctls
		if want := []string{"net/ipv4/conf/eno2.100/rp_filter=2"}; !slices.Equal(got, want) {
			t.Errorf("%s: the pause is told %q, want %q", name, got, want)
		}
	}
	cfg := Config{Metadata: Metadata{Name: "n", Namespace: "ns", UID: "u"}, Sysctls: map[string]string{"kernel.shm_rmid_forced": "1"}}
	if err := validate(&cfg); err != nil {
		t.Fatal(err)
	}
	if got := (Record{Config: cfg}).monitorSpec(&Manager{}).Pause.Sysctls; !slices.Equal(got, []string{"kernel/shm_rmid_forced=1"}) {
		t.Errorf("the pause is told %q", got)
	}
}

// The attack: sysctl names whose /proc/sys path climbs out of the
// namespaced tree (net/../kernel/core_pattern is the host's core_pattern:
// root code execution on the next crash), or is not a plain file name.
func TestSysctlNamesCannotLeaveTheirTree(t *testing.T) {
	md := Metadata{Name: "n", Namespace: "ns", UID: "u"}
	bad := map[string]string{
		"net.//.kernel.core_pattern":     "1", // net/../kernel/core_pattern
		"net/../kernel/core_pattern":     "1",
		"net.ipv4.//.//.kernel.modprobe": "1",
		"kernel.shm/.//.core_pattern":    "1", // kernel/shm./../core_pattern
		"fs.mqueue.//.//.kernel.panic":   "1",
		"net.ipv4..ip_forward":           "1",
		"net.ipv4.ip_forward.":           "1",
		"/net/ipv4/ip_forward":           "1",
		"net./.ipv4.ip_forward":          "1",
		"net.ipv4.ip_forward\x00x":       "1",
		"net.ipv4.tcp_syncookies":        "1\x00",
		"":                               "1",
	}
	for name, value := range bad {
		cfg := Config{Metadata: md, Sysctls: map[string]string{name: value}}
		if err := validate(&cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("sysctl %q=%q: got %v, want ErrInvalid", name, value, err)
		}
	}
	// Kubernetes' namespaced IPC sysctls are all accepted.
	ok := map[string]string{"kernel.shm_next_id": "1", "kernel.msg_next_id": "1", "kernel.sem": "250 32000 32 128", "fs.mqueue.queues_max": "300"}
	cfg := Config{Metadata: md, Sysctls: ok}
	if err := validate(&cfg); err != nil {
		t.Errorf("namespaced IPC sysctls: %v", err)
	}
}
