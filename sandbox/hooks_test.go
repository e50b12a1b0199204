package sandbox

import (
	"testing"
)

// Info.Hook is the pod as hooks (NRI) see it: its own network namespace
// only, pod-level resources copied.
func TestInfoHook(t *testing.T) {
	var info Info
	info.ID, info.NetNSPath = "p", "/run/netns/p"
	info.Config.Metadata = Metadata{Name: "n", UID: "u", Namespace: "ns"}
	info.Config.Resources = &PodResources{MemoryLimit: 1 << 20, Hugepages: map[string]uint64{"2MB": 4 << 20}}
	h := info.Hook()
	if h.ID != "p" || h.Name != "n" || h.UID != "u" || h.Namespace != "ns" || h.NetNSPath != "/run/netns/p" ||
		h.Overhead != nil || h.Resources.MemoryLimit != 1<<20 || h.Resources.Hugepages["2MB"] != 4<<20 {
		t.Fatalf("pod: %+v", h)
	}
	info.Config.Namespaces.Network = ModeNode
	if h := info.Hook(); h.NetNSPath != "" {
		t.Fatalf("host-network pod's netns: %q", h.NetNSPath)
	}
}
