package security

import (
	"errors"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/minicri/minicri/internal/errdefs"
)

func TestBuildCapabilities(t *testing.T) {
	host := []string{"CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_KILL"}
	def := DefaultCapabilities()
	without := func(caps []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return slices.Contains(drop, c) })
	}
	tests := []struct {
		name    string
		sec     CapRequest
		want    []string
		ambient []string
		invalid bool
	}{
		{name: "default", want: def},
		{name: "add any spelling", sec: CapRequest{CapAdd: []string{"NET_ADMIN", "sys_time", "CAP_SYS_PTRACE", "cap_chown"}},
			want: append(slices.Clone(def), "CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_SYS_PTRACE")},
		{name: "drop", sec: CapRequest{CapDrop: []string{"NET_RAW", "cap_chown", "SYS_ADMIN"}}, want: without(def, "CAP_NET_RAW", "CAP_CHOWN")},
		{name: "add ALL", sec: CapRequest{CapAdd: []string{"ALL"}}, want: host},
		{name: "add all lower case, drop one", sec: CapRequest{CapAdd: []string{"all"}, CapDrop: []string{"CHOWN"}}, want: without(host, "CAP_CHOWN")},
		{name: "drop ALL", sec: CapRequest{CapDrop: []string{"ALL"}}, want: nil},
		{name: "drop ALL add one", sec: CapRequest{CapDrop: []string{"ALL"}, CapAdd: []string{"NET_BIND_SERVICE"}}, want: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "add ALL and drop ALL", sec: CapRequest{CapAdd: []string{"ALL"}, CapDrop: []string{"ALL"}}, want: nil},
		{name: "drop wins over add", sec: CapRequest{CapAdd: []string{"SYS_TIME"}, CapDrop: []string{"SYS_TIME"}}, want: def},
		{name: "privileged", sec: CapRequest{Privileged: true, CapDrop: []string{"ALL"}}, want: host},
		{name: "ambient only when held", sec: CapRequest{AmbientAdd: []string{"NET_BIND_SERVICE", "SYS_ADMIN"}}, want: def, ambient: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "ambient after add", sec: CapRequest{CapAdd: []string{"SYS_ADMIN"}, AmbientAdd: []string{"cap_sys_admin"}},
			want: append(slices.Clone(def), "CAP_SYS_ADMIN"), ambient: []string{"CAP_SYS_ADMIN"}},
		{name: "empty name", sec: CapRequest{CapAdd: []string{""}}, invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Capabilities(&tt.sec, host)
			if tt.invalid {
				if !errors.Is(err, errdefs.ErrInvalid) {
					t.Fatalf("error %v, want one wrapping ErrInvalid", err)
				}
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
