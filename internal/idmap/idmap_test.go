package idmap

import "testing"

func TestCheck(t *testing.T) {
	good := [][]Mapping{
		{{ContainerID: 0, HostID: 1000, Length: 100000}},
		{{ContainerID: 0, HostID: 1 << 16, Length: 1 << 16}},
		{{ContainerID: 0, HostID: 1, Length: 1<<32 - 2}},
		{{ContainerID: 0, HostID: 100000, Length: 10}, {ContainerID: 10, HostID: 200000, Length: 10}},
	}
	for _, ms := range good {
		if err := Check(ms); err != nil {
			t.Errorf("%+v: %v", ms, err)
		}
	}
	bad := map[string][]Mapping{
		"host root":         {{ContainerID: 0, HostID: 0, Length: 65536}},
		"empty":             {{ContainerID: 0, HostID: 100000, Length: 0}},
		"host overflow":     {{ContainerID: 0, HostID: 1<<32 - 100, Length: 65536}},
		"host -1":           {{ContainerID: 0, HostID: 1<<32 - 1, Length: 1}},
		"container -1":      {{ContainerID: 1<<32 - 1, HostID: 100000, Length: 1}},
		"container overlap": {{ContainerID: 0, HostID: 100000, Length: 10}, {ContainerID: 5, HostID: 200000, Length: 10}},
		"host overlap":      {{ContainerID: 0, HostID: 100000, Length: 10}, {ContainerID: 10, HostID: 100005, Length: 10}},
	}
	for name, ms := range bad {
		if err := Check(ms); err == nil {
			t.Errorf("%s: %+v accepted", name, ms)
		}
	}
}

func TestMapped(t *testing.T) {
	m := []Mapping{{ContainerID: 0, HostID: 100000, Length: 1000}, {ContainerID: 65535, HostID: 200000, Length: 1}}
	for id, want := range map[uint32]bool{0: true, 999: true, 1000: false, 65534: false, 65535: true, 65536: false} {
		if got := Mapped(m, id); got != want {
			t.Errorf("Mapped(%d) = %v, want %v", id, got, want)
		}
	}
	if Mapped([]Mapping{{ContainerID: 4294967295, HostID: 1, Length: 1}}, 0) {
		t.Error("a mapping at the top of the range maps 0")
	}
}
