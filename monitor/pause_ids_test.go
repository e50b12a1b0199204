package monitor

import (
	"slices"
	"testing"

	"github.com/minicri/minicri/internal/idmap"
)

func TestPauseIDArgs(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	long := []idmap.Mapping{{ContainerID: 0, HostID: 1 << 20, Length: 1 << 16}}
	short := []idmap.Mapping{{ContainerID: 0, HostID: 1 << 20, Length: 1000}}
	tests := []struct {
		name string
		p    Pause
		want []string
	}{
		{"default", Pause{}, []string{"-u", "65535", "-g", "65535"}},
		{"userns with 65535", Pause{UserNS: &idmap.Mappings{UIDs: long, GIDs: long}}, []string{"-u", "65535", "-g", "65535"}},
		{"userns without 65535", Pause{UserNS: &idmap.Mappings{UIDs: short, GIDs: short}}, nil},
		{"run as user", Pause{RunAsUser: i64(1000)}, []string{"-u", "1000", "-g", "65535"}},
		{"run as user and group, groups", Pause{RunAsUser: i64(0), RunAsGroup: i64(3), Groups: []int64{4, 5}},
			[]string{"-u", "0", "-g", "3", "-G", "4", "-G", "5"}},
		{"group only, short userns", Pause{UserNS: &idmap.Mappings{UIDs: short, GIDs: short}, RunAsGroup: i64(7)}, []string{"-g", "7"}},
	}
	for _, tt := range tests {
		if got := pauseIDArgs(tt.p); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
