package monitor

import (
	"testing"

	"github.com/minicri/minicri/internal/idmap"
)

func TestMapped(t *testing.T) {
	m := []idmap.Mapping{{ContainerID: 0, HostID: 100000, Length: 1000}, {ContainerID: 65535, HostID: 200000, Length: 1}}
	for id, want := range map[uint32]bool{0: true, 999: true, 1000: false, 65534: false, 65535: true, 65536: false} {
		if got := mapped(m, id); got != want {
			t.Errorf("mapped(%d) = %v, want %v", id, got, want)
		}
	}
	if mapped([]idmap.Mapping{{ContainerID: 4294967295, HostID: 1, Length: 1}}, 0) {
		t.Error("a mapping at the top of the range maps 0")
	}
}
