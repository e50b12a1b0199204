package main

import "testing"

// TestLeakRows: leaks are counted by kind, ids, numbers and paths elided.
func TestLeakRows(t *testing.T) {
	s := &soak{find: newFindings()}
	id1, id2 := "22097918f2e40dc6517b20e1e15afa0d534cd407da57e938092aa015126645f1", "63ffdd2d1355597b1ab2d8c6cbd55983acfa64f84dab2fb66dad1418f9ebdc10"
	for _, m := range []string{
		"pod soak-8-2 (2031bc852455): cgroup /sys/fs/cgroup/cpu/minicri-soak-10005/" + id1,
		"pod soak-8-3 (19cf5b8e32db): cgroup /sys/fs/cgroup/memory/minicri-soak-10005/" + id2,
		"pod soak-1-0 (24983fa86c0a): shim socket /tmp/containerd-soak-1651986475/run/containerd/s/" + id1,
		"after the last pod: process 4242 sleep 2147483646",
	} {
		s.find.byKey["leak"] = append(s.find.byKey["leak"], "18:19:43.969 "+m)
	}
	want := []countRow{{key: "pod removed: cgroup /sys/fs/cgroup/*/minicri-soak-<n>/<id>", n: 2},
		{key: "node at the end: process <n> ...", n: 1}, {key: "pod removed: shim socket <dir>/run/containerd/s/<id>", n: 1}}
	got := s.leakRows()
	if len(got) != len(want) {
		t.Fatalf("leakRows = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
