package cgdriver

import (
	"os"
	"path/filepath"
	"testing"
)

// A daemon in the root cgroup of a v2 host (no memory.swap.max there: the
// root has none) still finds swap accounting in the cgroups below.
func TestSwapProbeFromTheRootCgroup(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpuset cpu io memory hugetlb pids\n")
	write("init.scope/cgroup.procs", "1\n")
	if swapProbe(root, true, "/") {
		t.Fatal("no cgroup has memory.swap.max: want no swap")
	}
	write("system.slice/memory.swap.max", "max\n")
	if !swapProbe(root, true, "/") {
		t.Error("daemon in the root cgroup: swap accounting below it not found")
	}
	if swapProbe(root, true, "/init.scope") {
		t.Error("daemon in /init.scope, which has no memory.swap.max: want no swap")
	}
	if !swapProbe(root, true, "/system.slice") {
		t.Error("daemon in /system.slice: want swap")
	}
	write("memory/memory.memsw.limit_in_bytes", "9223372036854771712\n")
	if !swapProbe(root, false, "") {
		t.Error("v1 with memsw: want swap")
	}
}
